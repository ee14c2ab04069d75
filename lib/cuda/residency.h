// Bookkeeping of the device memory that stage measurement reuses (see
// device_pool.h): how a grow-only buffer grows, and which weights are already
// on the device and where. Plain C++ with no CUDA types, so the policy is
// tested on machines without a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace ios::cuda {

// The capacity a grow-only buffer takes when `request` bytes do not fit in
// `capacity`: at least double, rounded up to 2 MiB, so a run of growing
// requests reallocates O(log(largest / 2 MiB)) times. Returns `capacity` when
// the request fits.
int64_t grown_capacity(int64_t capacity, int64_t request);

// Weights resident in one device buffer, keyed by the identity of their host
// data (ir::Tensor::data, shared by every stage that reads the same
// initializer). An entry holds its host data alive, so a key's address can
// never be reused by other data while the entry exists. Merged-convolution
// weights are new data every time and are simply appended; when the pool
// would pass its budget it is emptied and refilled by the stage at hand.
class WeightResidency {
 public:
  using Key = std::shared_ptr<const std::vector<float>>;

  explicit WeightResidency(int64_t budget_bytes, int64_t alignment = 256)
      : budget_(budget_bytes), alignment_(alignment) {}

  struct Placement {
    std::vector<int64_t> offsets;  // per key, bytes into the device buffer
    std::vector<bool> upload;      // per key: not resident before, copy it
    bool cleared = false;          // every earlier entry was dropped first
    int64_t end = 0;               // bytes the buffer must hold afterwards
  };
  // Places `keys` (each of `size()` floats): resident ones keep their offset,
  // others are appended. The same key twice in one call is placed once.
  Placement place(const std::vector<Key>& keys);
  // Drops every entry (the device buffer was replaced).
  void clear();

  int64_t used_bytes() const { return used_; }
  size_t resident() const { return entries_.size(); }

 private:
  struct Entry {
    Key data;
    int64_t offset = 0;
  };
  int64_t budget_, alignment_;
  int64_t used_ = 0;
  std::unordered_map<const void*, Entry> entries_;
};

// What a weight buffer of `capacity` bytes does for `placement` (made when
// `resident_before` bytes were resident): keep it (grow_to == 0), or grow to
// `grow_to` bytes, copying the first `copy_bytes` (the weights that stay
// resident keep their offsets).
struct BufferGrowth {
  int64_t grow_to = 0;
  int64_t copy_bytes = 0;
};
BufferGrowth weight_buffer_growth(int64_t capacity, int64_t resident_before, const WeightResidency::Placement& placement);

}  // namespace ios::cuda
