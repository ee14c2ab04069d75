// ONNX files are untrusted bytes: random corruptions of a small valid model
// must import or fail with a UserError naming the file, never crash.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "onnx/importer.h"
#include "model_builder.h"
#include "test_paths.h"

namespace {

// Imports `trials` corruptions of `good` (each 1..max_edits byte flips,
// erasures of up to max_erase bytes or insertions), written to `name` in the
// temporary folder: each imports or throws a UserError naming the file,
// never anything else. Returns how many were rejected.
int corrupt_and_import(const std::string& good, const std::string& name, unsigned seed, int trials, int max_edits,
                       int max_erase) {
  namespace fs = std::filesystem;
  const fs::path path = fs::temp_directory_path() / name;
  std::mt19937 rng(seed);
  int rejected = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(rng() % static_cast<unsigned>(max_edits));
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t pos = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes[pos] = static_cast<char>(rng() & 0xff); break;
        case 1: bytes.erase(pos, 1 + rng() % static_cast<unsigned>(max_erase)); break;
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
  return rejected;
}

}  // namespace

TEST_CASE("corrupted ONNX files fail cleanly", "[onnx][fuzz]") {
  namespace fs = std::filesystem;
  const fs::path source = ios::test::bad_models_dir() / "two_branch.onnx";
  INFO("needs " << source.string() << ": run scripts/setup.sh");
  REQUIRE(fs::exists(source));
  std::ifstream in(source, std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(good.size() > 100);

  CHECK(corrupt_and_import(good, "ios-import-fuzz.onnx", /*seed=*/7, /*trials=*/2000, /*max_edits=*/6,
                           /*max_erase=*/16) > 500);
}

// The opset-6 path (ONNX's checker at the file's opset, then its version
// converter, which asserts on what it does not expect) under the same
// corruptions: a PyTorch-style opset-6 model with the forms the converter
// rewrites (Add's broadcast, BatchNormalization's is_test, PRelu's
// per-channel slope).
TEST_CASE("corrupted opset-6 ONNX files fail cleanly through the version converter", "[onnx][fuzz]") {
  namespace fs = std::filesystem;
  ios::test::ModelBuilder b(6);
  b.model.set_ir_version(3);
  b.input("x", {1, 3, 4, 4});
  const auto weight = [&](const std::string& name, const std::vector<int64_t>& dims) {
    b.ramp_weight(name, dims);
    b.input(name, dims);  // before IR 4 every initializer is a graph input too
  };
  weight("w", {3, 3, 3, 3});
  b.node("Conv", {"x", "w"}, {"c"}, "conv");
  weight("bias", {2});  // along the last axis of the convolution's [1, 3, 2, 2]
  ios::test::ModelBuilder::integer(b.node("Add", {"c", "bias"}, {"a"}, "add"), "broadcast", 1);
  for (const char* name : {"scale", "shift", "mean", "var"}) weight(name, {3});
  ios::test::ModelBuilder::integer(b.node("BatchNormalization", {"a", "scale", "shift", "mean", "var"}, {"n"}, "bn"),
                                   "is_test", 1);
  weight("slope", {3});
  b.node("PRelu", {"n", "slope"}, {"y"}, "prelu");
  b.output("y", 4);
  const std::string good = b.bytes();
  const fs::path path = fs::temp_directory_path() / "ios-import-fuzz-opset6.onnx";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << good;
  }
  REQUIRE(ios::onnx::import_model(path.string()).graph.num_nodes() >= 3);
  fs::remove(path);
  CHECK(corrupt_and_import(good, "ios-import-fuzz-opset6.onnx", /*seed=*/11, /*trials=*/500, /*max_edits=*/4,
                           /*max_erase=*/8) > 100);
}
