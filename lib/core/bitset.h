// DynBitset: a fixed-size-at-construction bitset for reachability over whole
// graphs. The DP itself works on uint64_t masks of one block (<= 64 units).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ios {

class DynBitset {
 public:
  DynBitset() = default;
  explicit DynBitset(size_t bits) : bits_(bits), words_((bits + 63) / 64, 0) {}

  size_t size() const { return bits_; }
  void set(size_t i) { words_[i / 64] |= uint64_t{1} << (i % 64); }
  void reset(size_t i) { words_[i / 64] &= ~(uint64_t{1} << (i % 64)); }
  bool test(size_t i) const { return (words_[i / 64] >> (i % 64)) & 1U; }
  DynBitset& operator|=(const DynBitset& other) {
    for (size_t w = 0; w < words_.size(); ++w) words_[w] |= other.words_[w];
    return *this;
  }
  DynBitset& operator&=(const DynBitset& other) {
    for (size_t w = 0; w < words_.size(); ++w) words_[w] &= other.words_[w];
    return *this;
  }
  // Bits [64 * w, 64 * w + 64) as stored (bits past the end are 0).
  uint64_t word(size_t w) const { return words_[w]; }
  size_t num_words() const { return words_.size(); }
  size_t count() const {
    size_t c = 0;
    for (uint64_t w : words_) c += static_cast<size_t>(std::popcount(w));
    return c;
  }
  // Bits [begin, begin + 64) as a word (bits past the end read as 0).
  uint64_t window(size_t begin) const {
    uint64_t out = 0;
    for (size_t i = 0; i < 64 && begin + i < bits_; ++i) {
      if (test(begin + i)) out |= uint64_t{1} << i;
    }
    return out;
  }

 private:
  size_t bits_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace ios
