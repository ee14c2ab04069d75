// ONNX files are untrusted bytes: random corruptions of a small valid model
// must import or fail with a UserError naming the file, never crash.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "core/error.h"
#include "onnx/importer.h"
#include "test_paths.h"

TEST_CASE("corrupted ONNX files fail cleanly", "[onnx][fuzz]") {
  namespace fs = std::filesystem;
  const fs::path source = ios::test::bad_models_dir() / "two_branch.onnx";
  INFO("needs " << source.string() << ": run scripts/setup.sh");
  REQUIRE(fs::exists(source));
  std::ifstream in(source, std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(good.size() > 100);

  const fs::path path = fs::temp_directory_path() / "ios-import-fuzz.onnx";
  std::mt19937 rng(7);
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t pos = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes[pos] = static_cast<char>(rng() & 0xff); break;
        case 1: bytes.erase(pos, 1 + rng() % 16); break;
        case 2: bytes.insert(pos, 1, static_cast<char>(rng() & 0xff)); break;
      }
    }
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    try {
      ios::onnx::import_model(path.string());
    } catch (const ios::UserError& e) {
      ++rejected;
      REQUIRE(std::string(e.what()).find(path.string()) != std::string::npos);
    }
  }
  fs::remove(path);
  CHECK(rejected > 500);
}
