// The CUDA engine as an ios-run backend (--backend cuda, the default):
// streams, events, cuDNN and CUDA graphs; GPU compute time and end-to-end
// latency. Built with the CUDA backend and with its stub (lib/cuda_stub),
// where opening it reports that no CUDA device is usable (exit 3).
#pragma once

#include "exec/backend.h"

namespace ios::cuda {

exec::BackendEntry backend_entry();

}  // namespace ios::cuda
