#include "exec/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>
#include <unistd.h>

#include "core/error.h"
#include "core/file_io.h"

namespace ios::exec {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader and writer assume a little-endian host");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr int64_t kMaxDim = int64_t{1} << 40;  // far beyond any real tensor; keeps products finite

// The header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }
// This is a small recursive-descent parser for exactly that subset: string
// keys, and values that are strings, True/False or tuples of integers.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : s_(text), source_(source) {}

  struct Header {
    std::string descr;
    bool fortran_order = false;
    ir::Shape shape;
  };

  Header parse() {
    Header header;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      const std::string key = parse_string();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        header.descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        header.shape = parse_shape();
        have_shape = true;
      } else {
        fail(fmt::format("unknown header key '{}'", key));
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_space();
      expect('}');
      break;
    }
    // Whatever follows the dict must be padding (spaces) and the final newline.
    for (size_t i = pos_; i < s_.size(); ++i) {
      if (s_[i] != ' ' && s_[i] != '\n' && s_[i] != '\t' && s_[i] != '\r' && s_[i] != '\0') {
        fail("unexpected text after the header dictionary");
      }
    }
    if (!have_descr) fail("header has no 'descr'");
    if (!have_order) fail("header has no 'fortran_order'");
    if (!have_shape) fail("header has no 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    user_error("{}: bad .npy header: {} (at header byte {}); write the file with numpy.save", source_,
               what, pos_);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  std::string parse_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    ++pos_;
    const size_t begin = pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) ++pos_;
    if (pos_ >= s_.size()) fail("unterminated string");
    std::string out(s_.substr(begin, pos_ - begin));
    ++pos_;
    return out;
  }
  bool parse_bool() {
    if (s_.substr(pos_).starts_with("True")) {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_).starts_with("False")) {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  int64_t parse_int() {
    const size_t begin = pos_;
    int64_t value = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      value = value * 10 + (s_[pos_] - '0');
      if (value > kMaxDim) fail("dimension too large");
      ++pos_;
    }
    if (pos_ == begin) fail("expected a non-negative integer dimension");
    // numpy writes Python ints; very old writers appended 'L'.
    if (peek() == 'L') ++pos_;
    return value;
  }
  ir::Shape parse_shape() {
    ir::Shape shape;
    expect('(');
    skip_space();
    while (peek() != ')') {
      shape.push_back(parse_int());
      if (shape.size() > 32) fail("more than 32 dimensions");
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape");
      }
    }
    ++pos_;
    return shape;
  }

  std::string_view s_;
  const std::string& source_;
  size_t pos_ = 0;
};

template <typename T>
T load_le(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

}  // namespace

HostTensor parse_npy(std::span<const uint8_t> bytes, const std::string& source) {
  if (bytes.size() < 10) {
    user_error("{}: not a .npy file: only {} bytes (a .npy file starts with a 10-byte preamble)", source,
               bytes.size());
  }
  if (std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    user_error("{}: not a .npy file: the magic string \\x93NUMPY is missing", source);
  }
  const int major = bytes[6];
  const int minor = bytes[7];
  size_t header_len = 0;
  size_t header_start = 0;
  if (major == 1) {
    header_len = load_le<uint16_t>(bytes.data() + 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) user_error("{}: truncated .npy file: the header length is cut off", source);
    header_len = load_le<uint32_t>(bytes.data() + 8);
    header_start = 12;
  } else {
    user_error("{}: unsupported .npy format version {}.{} (1.0, 2.0 and 3.0 are supported)", source, major,
               minor);
  }
  if (header_len > bytes.size() - header_start) {
    user_error("{}: truncated .npy file: the header says {} bytes but only {} follow", source, header_len,
               bytes.size() - header_start);
  }
  const std::string_view header_text(reinterpret_cast<const char*>(bytes.data() + header_start), header_len);
  const auto header = HeaderParser(header_text, source).parse();

  if (header.fortran_order) {
    user_error("{}: Fortran-order arrays are not supported; save a C-order array "
               "(numpy.ascontiguousarray)",
               source);
  }
  // The type code, with its byte-order character.
  const std::string& d = header.descr;
  if (d.size() < 3) user_error("{}: unsupported dtype '{}' (use float32, '<f4')", source, d);
  const char order = d[0];
  const std::string_view code = std::string_view(d).substr(1);
  if (order == '>') {
    user_error("{}: big-endian dtype '{}' is not supported; convert with .astype('<f4')", source, d);
  }
  if (order != '<' && order != '=' && order != '|') {
    user_error("{}: unsupported dtype '{}' (use float32, '<f4')", source, d);
  }
  size_t item = 0;
  if (code == "f4") item = 4;
  else if (code == "f8" || code == "i8") item = 8;
  else user_error("{}: unsupported dtype '{}' (supported: '<f4', '<f8', '<i8')", source, d);

  // Element count, guarded against overflow (each dim <= 2^40, and we stop
  // as soon as the product exceeds what the file could hold).
  const size_t data_start = header_start + header_len;
  const size_t available = bytes.size() - data_start;
  int64_t count = 1;
  bool zero = false;
  for (int64_t dim : header.shape) {
    if (dim == 0) zero = true;
  }
  if (!zero) {
    for (int64_t dim : header.shape) {
      if (count > static_cast<int64_t>(available / item) / dim + 1) {
        user_error("{}: truncated .npy file: shape ({}) needs more than the {} data bytes present", source,
                   fmt::join(header.shape, ", "), available);
      }
      count *= dim;
    }
  } else {
    // An empty array still has a shape that later code multiplies out: the
    // product of its other dimensions must not overflow either.
    int64_t others = 1;
    for (int64_t dim : header.shape) {
      if (dim > 0 && __builtin_mul_overflow(others, dim, &others)) {
        user_error("{}: malformed .npy file: the dimensions of shape ({}) overflow", source,
                   fmt::join(header.shape, ", "));
      }
    }
    count = 0;
  }
  const size_t needed = static_cast<size_t>(count) * item;
  if (needed > available) {
    user_error("{}: truncated .npy file: shape ({}) of '{}' needs {} data bytes, found {}", source,
               fmt::join(header.shape, ", "), d, needed, available);
  }
  if (needed < available) {
    user_error("{}: malformed .npy file: {} bytes after the data of shape ({})", source, available - needed,
               fmt::join(header.shape, ", "));
  }

  HostTensor tensor;
  tensor.shape = header.shape;
  tensor.data.resize(static_cast<size_t>(count));
  const uint8_t* p = bytes.data() + data_start;
  if (code == "f4") {
    if (needed > 0) std::memcpy(tensor.data.data(), p, needed);  // data() may be null when empty
  } else if (code == "f8") {
    for (int64_t i = 0; i < count; ++i) tensor.data[static_cast<size_t>(i)] = static_cast<float>(load_le<double>(p + 8 * i));
  } else {
    for (int64_t i = 0; i < count; ++i) tensor.data[static_cast<size_t>(i)] = static_cast<float>(load_le<int64_t>(p + 8 * i));
  }
  return tensor;
}

HostTensor read_npy(const std::filesystem::path& path) {
  const std::string bytes = read_file_limited(path, kMaxNpyFileBytes, ".npy file");
  return parse_npy(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                   path.string());
}

std::vector<uint8_t> to_npy_bytes(const HostTensor& tensor) {
  IOS_ASSERT(ir::num_elements(tensor.shape) == tensor.size(), "tensor of shape {} holds {} values",
             ir::to_string(tensor.shape), tensor.size());
  std::string shape_text;
  for (int64_t dim : tensor.shape) shape_text += fmt::format("{}, ", dim);
  if (tensor.shape.size() > 1) shape_text.resize(shape_text.size() - 2);  // "(2, 3)", but "(5,)"
  else if (tensor.shape.size() == 1) shape_text.resize(shape_text.size() - 1);
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", shape_text);
  // Pad with spaces so that the data starts on a 64-byte boundary, as numpy does.
  const bool v2 = header.size() + 1 + 10 > std::numeric_limits<uint16_t>::max();
  const size_t preamble = v2 ? 12 : 10;
  const size_t total = (preamble + header.size() + 1 + 63) / 64 * 64;
  header.append(total - preamble - header.size() - 1, ' ');
  header.push_back('\n');

  // Sized up front and filled with memcpy (GCC 12 misreads vector::insert
  // of char ranges as an overflow).
  const size_t data_bytes = tensor.data.size() * sizeof(float);
  std::vector<uint8_t> out(preamble + header.size() + data_bytes);
  std::memcpy(out.data(), kMagic.data(), kMagic.size());
  out[6] = v2 ? 2 : 1;
  out[7] = 0;
  const auto len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < preamble - 8; ++i) out[8 + i] = static_cast<uint8_t>(len >> (8 * i));
  std::memcpy(out.data() + preamble, header.data(), header.size());
  if (data_bytes > 0) std::memcpy(out.data() + preamble + header.size(), tensor.data.data(), data_bytes);
  return out;
}

void write_npy(const std::filesystem::path& path, const HostTensor& tensor) {
  const auto bytes = to_npy_bytes(tensor);
  write_file_atomically(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

HostTensor random_tensor(const ir::Shape& shape, uint64_t seed, float lo, float hi) {
  HostTensor tensor(shape);
  uint64_t state = seed;
  for (float& v : tensor.data) {
    // SplitMix64 (Steele et al.), then the top 24 bits as a float in [0, 1).
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    const float unit = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
    v = lo + (hi - lo) * unit;
  }
  return tensor;
}

}  // namespace ios::exec
