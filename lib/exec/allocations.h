// Counting what an engine allocates, by kind: the backends report every
// allocation of weights and activations (and every release) to the counter
// their engine gives them, so a test can show that weights shared by
// several contexts and batch sizes are allocated once, and a user can see
// what each context costs (the engine API's Engine::allocations()).
//
// Thread-safe: the contexts of one engine allocate from several threads.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace ios::exec {

enum class AllocationKind { kWeights, kActivations, kWorkspaces };
constexpr int kAllocationKinds = 3;

// Live allocations and their bytes, per kind.
struct AllocationTotals {
  int64_t count = 0;
  int64_t bytes = 0;
};

class AllocationCounter {
 public:
  void allocated(AllocationKind kind, int64_t bytes) {
    Slot& s = slots_[static_cast<size_t>(kind)];
    s.count.fetch_add(1, std::memory_order_relaxed);
    s.bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  void freed(AllocationKind kind, int64_t bytes) {
    Slot& s = slots_[static_cast<size_t>(kind)];
    s.count.fetch_sub(1, std::memory_order_relaxed);
    s.bytes.fetch_sub(bytes, std::memory_order_relaxed);
  }
  AllocationTotals live(AllocationKind kind) const {
    const Slot& s = slots_[static_cast<size_t>(kind)];
    return {s.count.load(std::memory_order_relaxed), s.bytes.load(std::memory_order_relaxed)};
  }

 private:
  struct Slot {
    std::atomic<int64_t> count{0};
    std::atomic<int64_t> bytes{0};
  };
  std::array<Slot, kAllocationKinds> slots_;
};

// One allocation reported to a counter for as long as it lives (nothing
// without a counter). Movable, so it travels with the buffer it describes.
class CountedAllocation {
 public:
  CountedAllocation() = default;
  CountedAllocation(AllocationCounter* counter, AllocationKind kind, int64_t bytes)
      : counter_(counter), kind_(kind), bytes_(bytes) {
    if (counter_ != nullptr) counter_->allocated(kind_, bytes_);
  }
  ~CountedAllocation() { release(); }
  CountedAllocation(const CountedAllocation&) = delete;
  CountedAllocation& operator=(const CountedAllocation&) = delete;
  CountedAllocation(CountedAllocation&& other) noexcept
      : counter_(other.counter_), kind_(other.kind_), bytes_(other.bytes_) {
    other.counter_ = nullptr;
  }
  CountedAllocation& operator=(CountedAllocation&& other) noexcept {
    if (this != &other) {
      release();
      counter_ = other.counter_;
      kind_ = other.kind_;
      bytes_ = other.bytes_;
      other.counter_ = nullptr;
    }
    return *this;
  }

 private:
  void release() {
    if (counter_ != nullptr) counter_->freed(kind_, bytes_);
    counter_ = nullptr;
  }
  AllocationCounter* counter_ = nullptr;
  AllocationKind kind_ = AllocationKind::kWeights;
  int64_t bytes_ = 0;
};

}  // namespace ios::exec
