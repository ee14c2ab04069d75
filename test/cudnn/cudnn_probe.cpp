#include "cudnn_probe.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <iostream>

#include <exception>

namespace ios::cudnntest {

cuda::ConvShape conv3x3(ir::ElementType type, bool fused) {
  cuda::ConvShape s;
  s.n = 1, s.c = 64, s.k = 64;
  s.in = {56, 56}, s.filter = {3, 3}, s.out = {56, 56};
  s.pad = {1, 1}, s.stride = {1, 1}, s.dilation = {1, 1};
  s.x_batch_stride = s.x_item();
  s.y_batch_stride = s.y_item();
  s.type = type;
  s.fused = fused;
  return s;
}

std::string why_heuristics_cannot_answer() {
  try {
    const auto target = cuda::DeviceTarget::preset("h200");
    const cuda::BackendDescriptor device = cuda::make_device_properties(*target);
    const cuda::ConvGraphSpec spec = cuda::conv_graph_spec(
        conv3x3(ir::ElementType::kFloat16), ir::MathMode::kFp32, cuda::TensorLayout::kNhwc);
    const cuda::ConvOperationGraph graph = cuda::build_conv_graph(spec, nullptr, "probe");
    if (cuda::engine_configs(graph, spec, cuda::HeuristicMode::kA, &device).empty()) {
      return fmt::format(
          "cuDNN {} returns no engine configuration from heuristics mode A for an fp16 NHWC 3x3 "
          "convolution on a described H200 without a device",
          cudnnGetVersion());
    }
    return {};
  } catch (const std::exception& e) {
    return fmt::format("cuDNN {} cannot build a described device's heuristics without a device: {}",
                       cudnnGetVersion(), e.what());
  }
}

std::string why_runtime_fusion_cannot_answer() {
  try {
    const auto target = cuda::DeviceTarget::preset("h200");
    const cuda::BackendDescriptor device = cuda::make_device_properties(*target);
    const cuda::ConvGraphSpec spec = cuda::conv_graph_spec(
        conv3x3(ir::ElementType::kFloat16, true), ir::MathMode::kFp32, cuda::TensorLayout::kNhwc);
    const cuda::ConvOperationGraph graph = cuda::build_conv_graph(spec, nullptr, "probe");
    if (cuda::engine_configs(graph, spec, cuda::HeuristicMode::kA, &device).empty()) {
      return "cuDNN's runtime fusion engines return no configuration for a fused fp16 NHWC "
             "convolution (they "
             "need the driver library, libcuda.so.1, or the CUDA toolkit's stub of it)";
    }
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

void load_driver_library_or_stub() {
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL) != nullptr) return;
#ifdef IOS_CUDA_STUB_LIBCUDA
  // Loaded under its soname, libcuda.so.1: cuDNN's dlopen of that name finds it.
  if (dlopen(IOS_CUDA_STUB_LIBCUDA, RTLD_NOW | RTLD_GLOBAL) != nullptr) {
    std::cerr << "ios_cudnn_tests: no driver library; the CUDA toolkit's stub "
              << IOS_CUDA_STUB_LIBCUDA << " stands in for cuDNN's support checks\n";
  }
#endif
}

}  // namespace ios::cudnntest
