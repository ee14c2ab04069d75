// MaskMap: an open-addressing hash map from non-zero uint64_t masks to small
// values, for the DP's memo and stage-cost cache. Linear probing, power-of-two
// capacity, load factor <= 1/2, key 0 marks an empty slot (the empty set is
// never stored: its cost is 0 by definition). No erase, no per-entry
// allocation: a lookup is a multiply, a shift and usually one cache line.
#pragma once

#include <cstdint>
#include <vector>

#include "core/error.h"

namespace ios::sched {

template <typename Value>
class MaskMap {
 public:
  explicit MaskMap(size_t expected = 1024) { rehash(capacity_for(expected)); }

  // The value stored for `key`, or null.
  const Value* find(uint64_t key) const {
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (e.key == key) return &e.value;
      if (e.key == 0) return nullptr;
    }
  }
  Value* find(uint64_t key) {
    return const_cast<Value*>(static_cast<const MaskMap*>(this)->find(key));
  }

  // Inserts or overwrites. The reference is valid until the next insert.
  Value& insert(uint64_t key, const Value& value) {
    IOS_ASSERT(key != 0, "MaskMap keys must be non-zero");
    if (2 * (size_ + 1) > entries_.size()) rehash(entries_.size() * 2);
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      Entry& e = entries_[i];
      if (e.key == key) {
        e.value = value;
        return e.value;
      }
      if (e.key == 0) {
        e.key = key;
        e.value = value;
        ++size_;
        return e.value;
      }
    }
  }

  size_t size() const { return size_; }

  template <typename F>
  void for_each(F&& f) const {
    for (const Entry& e : entries_) {
      if (e.key != 0) f(e.key, e.value);
    }
  }

 private:
  struct Entry {
    uint64_t key = 0;
    Value value{};
  };

  static size_t capacity_for(size_t expected) {
    size_t c = 16;
    while (c < 2 * expected) c *= 2;
    return c;
  }
  size_t slot(uint64_t key) const {
    // Fibonacci hashing: the high bits of key * 2^64/phi spread masks that
    // differ in few low bits (typical for DP states) over the whole table.
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  void rehash(size_t capacity) {
    std::vector<Entry> old = std::move(entries_);
    entries_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    size_ = 0;
    for (const Entry& e : old) {
      if (e.key != 0) insert(e.key, e.value);
    }
  }

  std::vector<Entry> entries_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace ios::sched
