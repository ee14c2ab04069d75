// SHA-256 against the FIPS 180-4 example vectors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/error.h"
#include "core/sha256.h"

TEST_CASE("sha256_hex matches the FIPS 180-4 vectors", "[core][sha256]") {
  CHECK(ios::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(ios::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(ios::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(ios::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256_hex handles every padding boundary consistently", "[core][sha256]") {
  // 55, 56 and 64 bytes straddle the one-block / two-block padding cases;
  // the file hash (streamed in 1 MiB reads) must agree with the in-memory one.
  const auto dir = std::filesystem::temp_directory_path() / ("ios_sha_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (size_t n : {55u, 56u, 63u, 64u, 65u, 119u, 120u, 1048577u}) {
    std::string data(n, '\0');
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<char>((i * 31 + 7) & 0xff);
    const auto path = dir / ("f" + std::to_string(n));
    {
      std::ofstream out(path, std::ios::binary);
      out << data;
    }
    CHECK(ios::sha256_file(path.string()) == ios::sha256_hex(data));
    CHECK(ios::sha256_hex(data).size() == 64);
  }
  CHECK(ios::sha256_hex(std::string(56, 'x')) != ios::sha256_hex(std::string(55, 'x')));
  std::filesystem::remove_all(dir);
}

TEST_CASE("sha256_file names a missing file", "[core][sha256]") {
  try {
    ios::sha256_file("/nonexistent/ios/model.onnx");
    FAIL("no error");
  } catch (const ios::UserError& e) {
    CHECK(std::string(e.what()).find("/nonexistent/ios/model.onnx") != std::string::npos);
  }
}

TEST_CASE("the SHA extension path and the portable one agree", "[core][sha256]") {
  // On a CPU with SHA-NI the vectors above ran the extension path; this
  // compares it with the portable code on every length around block edges.
  INFO("CPU SHA extensions: " << ios::detail::sha256_uses_cpu_extensions());
  std::string data;
  for (size_t n = 0; n <= 300; ++n) {
    CHECK(ios::sha256_hex(data) == ios::detail::sha256_hex_portable(data));
    data.push_back(static_cast<char>((n * 131 + 17) & 0xff));
  }
  std::string large(3 * 1048576 + 13, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>((i * 2654435761u) >> 13);
  CHECK(ios::sha256_hex(large) == ios::detail::sha256_hex_portable(large));
}
