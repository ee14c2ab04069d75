// The GPU simulator as an ios-run backend (--backend sim): predicts each
// plan's timeline on a device profile (cost/device_profile.h) and executes
// nothing, so it computes no outputs; its timing is one deterministic
// prediction and its trace the predicted timeline.
#pragma once

#include "exec/backend.h"

namespace ios::sim_backend {

exec::BackendEntry backend_entry();

}  // namespace ios::sim_backend
