// Which kernels run a model's convolutions on the GPU, as one value
// (--conv-kernels, the engine API's conv_kernels), parsed once where it
// enters, and the kernel-selection version that measured stage latencies
// and persisted plan choices carry, so that a stage measured with one way of
// choosing kernels is not reused by another.
//
//   legacy  cuDNN's legacy calls (cudnnConvolutionForward and the fused
//           cudnnConvolutionBiasActivationForward), the algorithm timed
//           among cuDNN's ranking per process (cuda/conv.h). The default.
//   graph   cuDNN's graph API: per convolution an operation graph with its
//           fused epilogue, engine configurations from heuristics modes A
//           and B and the fallback list, the plans that build timed against
//           each other, the fastest kept (cuda/cudnn_graph.h); the legacy
//           call where no plan builds.
//
// Plain C++: the CUDA build, lib/cuda_stub and the cost models share it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace ios::exec {

enum class ConvKernels : uint8_t { kLegacy, kGraph };

inline const char* conv_kernels_name(ConvKernels kernels) {
  return kernels == ConvKernels::kGraph ? "graph" : "legacy";
}

inline std::optional<ConvKernels> parse_conv_kernels(std::string_view name) {
  if (name == "legacy") return ConvKernels::kLegacy;
  if (name == "graph") return ConvKernels::kGraph;
  return std::nullopt;
}

// The same, or UserError "<what> '<name>': expected legacy or graph".
inline ConvKernels parse_conv_kernels(std::string_view name, std::string_view what) {
  if (const auto k = parse_conv_kernels(name)) return *k;
  user_error("{} '{}': expected legacy or graph", what, name);
}

// The kernel-selection version: how kernels are chosen, named and numbered.
// Raise the number of a way when a change to it makes what it measured
// before stale (profile-database rows and plan-cache entries of another
// version are measured again, not reused). "legacy-1" is what every stage
// measured before the version was recorded used.
inline std::string kernel_selection(ConvKernels kernels) {
  return kernels == ConvKernels::kGraph ? "graph-1" : "legacy-1";
}

}  // namespace ios::exec
