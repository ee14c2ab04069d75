// A torchvision model through ios from C++: find a schedule with
// ios::Schedule::optimize, run the model with it on an ios::Engine, and compare the
// output with PyTorch's by the accuracy rule of the model-family tests
// (examples/torchvision_export.py, which exported the model: at most twice
// PyTorch float32's error against the float64 truth, rms and max).
//
//   /usr/bin/python3 examples/torchvision_export.py squeezenet1_1 --out-dir /tmp/ex   # prints STEM
//   torchvision_example STEM [cpu|cuda]
//
// STEM.onnx is the model; STEM.input.npy, STEM.truth.npy and STEM.torch.npy
// the input, PyTorch's float64 output and its float32 output. Exit status 0
// when ios's output passes the rule, 1 when it does not, 2 on an error.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ios/engine.h"

namespace {

// A little-endian float32 or float64 .npy file in C order, as numpy.save
// writes it, read as doubles (enough of the format for these files).
struct Npy {
  std::vector<int64_t> shape;
  std::vector<double> values;
};

Npy read_npy(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw ios::UserError(path + ": cannot open it");
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string bytes = buffer.str();
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw ios::UserError(path + ": not a .npy file");
  const size_t header_bytes =
      bytes[6] == 1 ? static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8 : 0;
  const std::string header = bytes.substr(10, header_bytes);
  const bool f4 = header.find("'<f4'") != std::string::npos,
             f8 = header.find("'<f8'") != std::string::npos;
  if (header_bytes == 0 || (!f4 && !f8) ||
      header.find("'fortran_order': False") == std::string::npos) {
    throw ios::UserError(path + ": expected a version 1 .npy of float32 or float64 in C order");
  }
  Npy npy;
  const size_t open = header.find('(', header.find("'shape'")), close = header.find(')', open);
  std::stringstream dims(header.substr(open + 1, close - open - 1));
  for (std::string dim; std::getline(dims, dim, ',');) {
    if (dim.find_first_not_of(' ') != std::string::npos) npy.shape.push_back(std::stoll(dim));
  }
  int64_t count = 1;
  for (int64_t d : npy.shape) count *= d;
  const size_t item = f4 ? 4 : 8, data = 10 + header_bytes;
  if (bytes.size() != data + static_cast<size_t>(count) * item)
    throw ios::UserError(path + ": truncated");
  npy.values.resize(static_cast<size_t>(count));
  for (size_t i = 0; i < npy.values.size(); ++i) {
    if (f4) {
      float v;
      std::memcpy(&v, bytes.data() + data + i * item, item);
      npy.values[i] = v;
    } else {
      std::memcpy(&npy.values[i], bytes.data() + data + i * item, item);
    }
  }
  return npy;
}

struct Errors {
  double rms = 0.0, max = 0.0;
};

template <typename T>
Errors errors(const std::vector<T>& actual, const std::vector<double>& truth) {
  Errors e;
  for (size_t i = 0; i < truth.size(); ++i) {
    const double d = static_cast<double>(actual[i]) - truth[i];
    e.rms += d * d;
    e.max = std::max(e.max, std::fabs(d));
  }
  e.rms = std::sqrt(e.rms / static_cast<double>(truth.size()));
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr,
                 "usage: torchvision_example STEM [cpu|cuda]   (STEM.onnx, STEM.input.npy, ...)\n");
    return 2;
  }
  const std::string stem = argv[1], backend = argc == 3 ? argv[2] : "cpu";
  try {
    // Optimize: ios-optimize STEM.onnx --batch 1 --cost simulated, as a call.
    ios::OptimizeOptions options;
    options.batch = 1;
    options.cost = "simulated";
    const ios::Schedule schedule = ios::Schedule::optimize(stem + ".onnx", options);
    schedule.save(stem + ".ios.schedule.json");
    std::printf("optimized: %s schedule, %zu stages, predicted %.4f ms\n",
                schedule.scheduler().c_str(), schedule.stages().size(),
                schedule.predicted_latency_ms());

    // Run: the engine checks the schedule against the model; a context per thread.
    ios::EngineOptions engine_options;
    engine_options.backend = backend;
    engine_options.precision = "fp32";
    const ios::Engine engine(stem + ".onnx", schedule, engine_options);
    const ios::TensorDesc& in = engine.inputs().at(0);
    const ios::TensorDesc& out = engine.outputs().at(0);
    const Npy input = read_npy(stem + ".input.npy");
    const ios::Tensor x{input.shape, std::vector<float>(input.values.begin(), input.values.end())};
    const auto context = engine.create_context();
    const ios::TensorMap outputs = context->run({{in.name, x}});
    const std::vector<float>& y = outputs.at(out.name).data;

    // Compare with PyTorch.
    const Npy truth = read_npy(stem + ".truth.npy"), peer = read_npy(stem + ".torch.npy");
    if (truth.values.size() != y.size() || peer.values.size() != y.size()) {
      throw ios::UserError("the output has " + std::to_string(y.size()) + " values, PyTorch's " +
                           std::to_string(truth.values.size()));
    }
    const Errors ours = errors(y, truth.values), theirs = errors(peer.values, truth.values);
    const bool passed = ours.rms <= 2 * theirs.rms && ours.max <= 2 * theirs.max;
    std::printf(
        "error against the float64 truth: ios rms %.3g max %.3g, PyTorch float32 rms %.3g max %.3g "
        "(rule: ios <= 2x PyTorch)\n",
        ours.rms, ours.max, theirs.rms, theirs.max);
    std::printf("%s\n", passed ? "PASSED: ios matches PyTorch"
                               : "FAILED: ios differs from PyTorch beyond the rule");
    return passed ? 0 : 1;
  } catch (const ios::Error& e) {
    std::fprintf(stderr, "torchvision_example: error: %s\n", e.what());
    return 2;
  }
}
