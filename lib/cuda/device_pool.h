// Device memory shared by the stage runtimes of the measured cost model.
//
// The measured cost model times thousands of stages (RandWire asks for over
// 100,000), one short-lived Runtime each. A runtime of its own per stage
// would cudaMalloc an arena and its weights, upload every weight, and
// cudaFree both again (each cudaFree synchronises the device): milliseconds
// per stage. With a pool, a stage runtime borrows a grow-only arena, finds
// the model's weights already resident (uploaded once, see residency.h), and
// makes its inputs on the device. Only one runtime may use a pool at a time:
// the measured cost model builds, times and destroys them one after another.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/program.h"
#include "cuda/residency.h"
#include "cuda/resources.h"

namespace ios::cuda {

struct DevicePoolStats {
  int arena_allocations = 0;   // cudaMalloc of the arena (growths included)
  int weight_allocations = 0;  // cudaMalloc of the weight buffer
  int64_t weights_uploaded = 0;       // constants copied to the device
  int64_t weights_reused = 0;         // constants found resident
  int64_t weight_bytes_uploaded = 0;
};

class DevicePool {
 public:
  explicit DevicePool(int64_t weight_budget_bytes = int64_t{1} << 30) : residency_(weight_budget_bytes) {}
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  // A device buffer of at least `bytes`, kBufferAlignment-aligned. Its
  // contents are unspecified; a growth replaces it.
  char* arena(int64_t bytes);
  // Device pointers of `constants`, uploading (asynchronously on `stream`)
  // those not resident yet. The weight buffer grows (at least doubling, the
  // resident weights copied along) until it passes the budget; then it is
  // emptied and refilled by the stage at hand.
  std::vector<const void*> weights(const std::vector<Constant>& constants, cudaStream_t stream);

  const DevicePoolStats& stats() const { return stats_; }

 private:
  DeviceBuffer arena_, weights_;
  WeightResidency residency_;
  DevicePoolStats stats_;
};

}  // namespace ios::cuda
