// Host tensors and the .npy file format (NumPy's own, version 1.0 to 3.0).
//
// ios-run reads model inputs from and writes outputs to .npy files, one per
// ONNX input/output name; the tests exchange tensors with ONNX Runtime the
// same way. Only what CNN inference needs is supported: C-order arrays of
// little-endian float32 ('<f4'), plus '<f8' and '<i8' converted to float32 on
// reading. Anything else (Fortran order, big-endian, other dtypes, truncated
// data, a malformed header) is a UserError naming the file and the problem.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ios::exec {

// A dense, row-major float32 tensor in host memory: what backends take as
// inputs and give back as outputs.
struct HostTensor {
  ir::Shape shape;
  std::vector<float> data;

  HostTensor() = default;
  explicit HostTensor(ir::Shape s) : shape(std::move(s)), data(static_cast<size_t>(ir::num_elements(shape))) {}
  HostTensor(ir::Shape s, std::vector<float> d) : shape(std::move(s)), data(std::move(d)) {}

  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

// Parses the bytes of a .npy file; `source` names it in error messages.
HostTensor parse_npy(std::span<const uint8_t> bytes, const std::string& source);

// Reads a .npy file. Throws UserError naming the file on any problem.
// A .npy file larger than this (2 GiB: half a billion float32 values) is
// refused before it is read.
inline constexpr uint64_t kMaxNpyFileBytes = uint64_t{2} << 30;
HostTensor read_npy(const std::filesystem::path& path);

// The bytes of a version 1.0 .npy file ('<f4', C order); version 2.0 only
// when the header does not fit version 1.0's 16-bit length.
std::vector<uint8_t> to_npy_bytes(const HostTensor& tensor);

// Writes a .npy file atomically (temporary file, then rename), so an
// interrupted run never leaves a truncated file behind.
void write_npy(const std::filesystem::path& path, const HostTensor& tensor);

// A tensor of uniform random values in [lo, hi), from a seeded generator that
// gives the same values on every platform (SplitMix64; not std:: distributions,
// whose output differs between standard libraries).
HostTensor random_tensor(const ir::Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

}  // namespace ios::exec
