// The CPU reference executor as an ios-run backend (--backend cpu): FP32,
// outputs computed, wall-clock timing.
#pragma once

#include "exec/backend.h"

namespace ios::cpu {

exec::BackendEntry backend_entry();

}  // namespace ios::cpu
