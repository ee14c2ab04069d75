// The .npy reader and writer: files written by numpy itself, round trips,
// every rejection the format calls for, and a fuzz loop over mutated and
// truncated files (the parser may only succeed or throw UserError).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

#include "core/error.h"
#include "exec/npy.h"

namespace ios::exec {
namespace {

// .npy files written by numpy 1.24 (the format's reference writer), as hex;
// each constant names the call that produced it.

// numpy.save(np.array([[0.5, -1.25, 3.0], [1e-3, 7.0, -0.0]], dtype='<f4'))
inline constexpr const char* kNumpyF4 =
    "934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2046616c73"
    "652c20277368617065273a2028322c2033292c207d202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a0000003f0000a0bf000040406f12833a"
    "0000e04000000080";

// numpy.save(np.array([1.5, -2.25, 1e10], dtype='<f8'))
inline constexpr const char* kNumpyF8 =
    "934e554d5059010076007b276465736372273a20273c6638272c2027666f727472616e5f6f72646572273a2046616c73"
    "652c20277368617065273a2028332c292c207d2020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a000000000000f83f00000000000002c0"
    "000000205fa00242";

// numpy.save(np.array([[3], [-4]], dtype='<i8'))
inline constexpr const char* kNumpyI8 =
    "934e554d5059010076007b276465736372273a20273c6938272c2027666f727472616e5f6f72646572273a2046616c73"
    "652c20277368617065273a2028322c2031292c207d202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a0300000000000000fcffffffffffffff";

// np.lib.format.write_array(f, np.array([2.5], dtype='<f4'), version=(2, 0))
inline constexpr const char* kNumpyV2 =
    "934e554d50590200740000007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a204661"
    "6c73652c20277368617065273a2028312c292c207d202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a00002040";

// numpy.save(np.array(4.0, dtype='<f4'))
inline constexpr const char* kNumpyScalar =
    "934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2046616c73"
    "652c20277368617065273a2028292c207d20202020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a00008040";

// numpy.save(np.asfortranarray(np.ones((2, 2), dtype='<f4')))
inline constexpr const char* kNumpyFortran =
    "934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2054727565"
    "2c20277368617065273a2028322c2032292c207d20202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a0000803f0000803f0000803f0000803f";

// numpy.save(np.ones((2,), dtype='>f4'))
inline constexpr const char* kNumpyBigEndian =
    "934e554d5059010076007b276465736372273a20273e6634272c2027666f727472616e5f6f72646572273a2046616c73"
    "652c20277368617065273a2028322c292c207d2020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a3f8000003f800000";

// numpy.save(np.ones((2,), dtype='<i4'))
inline constexpr const char* kNumpyInt32 =
    "934e554d5059010076007b276465736372273a20273c6934272c2027666f727472616e5f6f72646572273a2046616c73"
    "652c20277368617065273a2028322c292c207d2020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a0100000001000000";

std::vector<uint8_t> from_hex(const char* hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; hex[i] && hex[i + 1]; i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(hex + i, 2), nullptr, 16)));
  }
  return out;
}

// The message of the UserError that parsing `bytes` throws ("" if none).
std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    parse_npy(bytes, "t.npy");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

std::vector<uint8_t> with_header(const std::string& header, size_t data_bytes, int version = 1) {
  std::vector<uint8_t> out{0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(version), 0};
  const auto len = static_cast<uint32_t>(header.size());
  out.push_back(static_cast<uint8_t>(len & 0xff));
  out.push_back(static_cast<uint8_t>((len >> 8) & 0xff));
  if (version >= 2) {
    out.push_back(static_cast<uint8_t>((len >> 16) & 0xff));
    out.push_back(static_cast<uint8_t>(len >> 24));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes, 0);
  return out;
}

TEST_CASE("npy: reads what numpy writes", "[exec][npy]") {
  const auto f4 = parse_npy(from_hex(kNumpyF4), "f4.npy");
  CHECK(f4.shape == ir::Shape{2, 3});
  CHECK(f4.data == std::vector<float>{0.5f, -1.25f, 3.0f, 1e-3f, 7.0f, -0.0f});
  CHECK(std::signbit(f4.data[5]));

  const auto f8 = parse_npy(from_hex(kNumpyF8), "f8.npy");
  CHECK(f8.shape == ir::Shape{3});
  CHECK(f8.data == std::vector<float>{1.5f, -2.25f, 1e10f});

  const auto i8 = parse_npy(from_hex(kNumpyI8), "i8.npy");
  CHECK(i8.shape == ir::Shape{2, 1});
  CHECK(i8.data == std::vector<float>{3.0f, -4.0f});

  const auto v2 = parse_npy(from_hex(kNumpyV2), "v2.npy");
  CHECK(v2.shape == ir::Shape{1});
  CHECK(v2.data == std::vector<float>{2.5f});

  const auto scalar = parse_npy(from_hex(kNumpyScalar), "s.npy");
  CHECK(scalar.shape.empty());
  CHECK(scalar.data == std::vector<float>{4.0f});
}

TEST_CASE("npy: rejects what it cannot read, naming the file and the problem", "[exec][npy]") {
  CHECK_THAT(parse_error(from_hex(kNumpyFortran)), Catch::Contains("t.npy") && Catch::Contains("Fortran"));
  CHECK_THAT(parse_error(from_hex(kNumpyBigEndian)), Catch::Contains("big-endian"));
  CHECK_THAT(parse_error(from_hex(kNumpyInt32)), Catch::Contains("unsupported dtype '<i4'"));

  auto truncated = from_hex(kNumpyF4);
  truncated.pop_back();
  CHECK_THAT(parse_error(truncated), Catch::Contains("truncated") && Catch::Contains("needs 24 data bytes, found 23"));
  auto extra = from_hex(kNumpyF4);
  extra.push_back(0);
  CHECK_THAT(parse_error(extra), Catch::Contains("1 bytes after the data"));
  const auto whole = from_hex(kNumpyF4);
  CHECK_THAT(parse_error(std::vector<uint8_t>(whole.begin(), whole.begin() + 60)),
             Catch::Contains("truncated") && Catch::Contains("header"));

  CHECK_THAT(parse_error({}), Catch::Contains("not a .npy file"));
  CHECK_THAT(parse_error({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0}), Catch::Contains("magic"));
  auto v9 = from_hex(kNumpyF4);
  v9[6] = 9;
  CHECK_THAT(parse_error(v9), Catch::Contains("version 9.0"));

  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  CHECK(parse_error(with_header(ok, 8)).empty());
  CHECK(parse_error(with_header(ok, 8, 3)).empty());  // version 3.0: utf-8 header, same layout
  CHECK_THAT(parse_error(with_header("{'descr': '<f4', 'shape': (2,), }", 8)), Catch::Contains("no 'fortran_order'"));
  CHECK_THAT(parse_error(with_header("{'descr': '<f4', 'fortran_order': False}", 8)), Catch::Contains("no 'shape'"));
  CHECK_THAT(parse_error(with_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", 8)),
             Catch::Contains("True or False"));
  CHECK_THAT(parse_error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1)}", 8)),
             Catch::Contains("non-negative integer"));
  CHECK_THAT(parse_error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8)),
             Catch::Contains("unknown header key 'x'"));
  CHECK_THAT(parse_error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} trailing", 8)),
             Catch::Contains("after the header"));
  CHECK_THAT(parse_error(with_header("{'descr: '<f4'", 8)), Catch::Contains("bad .npy header"));
  // A shape whose element count overflows 64 bits is "too large", not a crash.
  CHECK_THAT(parse_error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776, 1099511627776)}", 8)),
             Catch::Contains("truncated"));
  CHECK_THAT(parse_error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 8)),
             Catch::Contains("too large"));
  // An empty array is fine.
  CHECK(parse_npy(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", 0), "e").data.empty());
}

TEST_CASE("npy: write then read gives the same tensor, laid out as numpy does", "[exec][npy]") {
  for (const ir::Shape& shape : {ir::Shape{}, ir::Shape{5}, ir::Shape{2, 3, 4, 5}, ir::Shape{0, 2}}) {
    const HostTensor t = random_tensor(shape, 42);
    const auto bytes = to_npy_bytes(t);
    // Version 1.0; the data starts 64-byte aligned right after a '\n'.
    REQUIRE(bytes[6] == 1);
    const size_t header_len = bytes[8] | (bytes[9] << 8);
    CHECK((10 + header_len) % 64 == 0);
    CHECK(bytes[10 + header_len - 1] == '\n');
    const HostTensor back = parse_npy(bytes, "roundtrip");
    CHECK(back.shape == t.shape);
    CHECK(back.data == t.data);
  }
  // Through a file, atomically: no temporary left behind.
  const auto dir = std::filesystem::temp_directory_path() / ("ios_npy_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const HostTensor t = random_tensor({1, 3, 8, 8}, 7);
  write_npy(dir / "x.npy", t);
  CHECK(read_npy(dir / "x.npy").data == t.data);
  CHECK(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()) == 1);
  CHECK_THROWS_AS(read_npy(dir / "missing.npy"), UserError);
  CHECK_THROWS_WITH(write_npy(dir / "no_such_dir" / "y.npy", t), Catch::Contains("cannot write"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("npy: random_tensor is seeded and stays in range", "[exec][npy]") {
  const auto a = random_tensor({1000}, 3, -2.0f, 5.0f);
  const auto b = random_tensor({1000}, 3, -2.0f, 5.0f);
  const auto c = random_tensor({1000}, 4, -2.0f, 5.0f);
  CHECK(a.data == b.data);
  CHECK(a.data != c.data);
  double mean = 0;
  for (float v : a.data) {
    REQUIRE(v >= -2.0f);
    REQUIRE(v < 5.0f);
    mean += v / 1000.0;
  }
  CHECK(mean == Approx(1.5).margin(0.3));  // uniform on [-2, 5)
}

TEST_CASE("npy: fuzzed files only ever parse or throw UserError", "[exec][npy][fuzz]") {
  const std::vector<std::vector<uint8_t>> seeds{from_hex(kNumpyF4), from_hex(kNumpyF8), from_hex(kNumpyI8),
                                                from_hex(kNumpyV2), from_hex(kNumpyScalar)};
  std::mt19937_64 rng(12345);
  const std::string alphabet = "{}()[]',: 0123456789-<>|=fiuTrueFalsedescrshapefortran_order\n\x93NUMPY";
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    auto bytes = seeds[rng() % seeds.size()];
    const int mutations = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < mutations; ++m) {
      switch (rng() % 6) {
        case 0:  // truncate
          bytes.resize(rng() % (bytes.size() + 1));
          break;
        case 1:  // flip a bit
          if (!bytes.empty()) bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 2:  // overwrite with a random byte
          if (!bytes.empty()) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
          break;
        case 3:  // overwrite with a header-ish character (reaches deeper into the parser)
          if (!bytes.empty()) bytes[rng() % bytes.size()] = static_cast<uint8_t>(alphabet[rng() % alphabet.size()]);
          break;
        case 4:  // insert
          bytes.insert(bytes.begin() + static_cast<long>(rng() % (bytes.size() + 1)), static_cast<uint8_t>(rng()));
          break;
        case 5:  // erase
          if (!bytes.empty()) bytes.erase(bytes.begin() + static_cast<long>(rng() % bytes.size()));
          break;
      }
    }
    try {
      const HostTensor t = parse_npy(bytes, "fuzz.npy");
      REQUIRE(static_cast<int64_t>(t.data.size()) == ir::num_elements(t.shape));
      ++parsed;
    } catch (const UserError& e) {
      REQUIRE_THAT(e.what(), Catch::StartsWith("fuzz.npy: "));
      ++rejected;
    }
  }
  // Both outcomes are exercised (most mutations are rejected).
  CHECK(parsed > 100);
  CHECK(rejected > 10000);
}


TEST_CASE("npy: an empty float32 array parses to an empty tensor", "[exec][npy]") {
  // numpy.save of np.zeros((0,), np.float32): no data bytes after the header.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(header.size()), 0};
  bytes.insert(bytes.end(), header.begin(), header.end());
  const auto t = parse_npy(bytes, "empty.npy");
  CHECK(t.data.empty());
  CHECK(t.shape == ios::ir::Shape{0, 5});
}

TEST_CASE("npy: an empty array whose other dimensions overflow is refused", "[exec][npy]") {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 0), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(header.size()), 0};
  bytes.insert(bytes.end(), header.begin(), header.end());
  CHECK_THROWS_WITH(parse_npy(bytes, "huge.npy"), Catch::Contains("huge.npy") && Catch::Contains("overflow"));
}

}  // namespace
}  // namespace ios::exec
