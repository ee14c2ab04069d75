// Whether this machine's cuDNN answers heuristics without a device, and the
// small convolution the tests ask about.
#pragma once

#include <string>

#include "cuda/cudnn_graph.h"

namespace ios::cudnntest {

// A 3x3 convolution, 64 -> 64 channels on 56x56, stride 1, pad 1, batch 1,
// of `type`; fused with bias + ReLU when `fused`.
cuda::ConvShape conv3x3(ir::ElementType type, bool fused = false);

// Empty when mode A returns at least one configuration for conv3x3(fp16) in
// NHWC on a described H200; otherwise why not.
std::string why_heuristics_cannot_answer();

// Empty when mode A returns a configuration for conv3x3(fp16, fused) in NHWC
// on a described H200: cuDNN's runtime fusion engines answer (they need the
// driver library loadable, and NHWC); otherwise why not.
std::string why_runtime_fusion_cannot_answer();

// Loads libcuda.so.1, or where there is none (no driver) the CUDA toolkit's
// stub of it (IOS_CUDA_STUB_LIBCUDA), so that cuDNN's runtime fusion engines
// find it by name and answer support checks. Nothing calls into it.
void load_driver_library_or_stub();

}  // namespace ios::cudnntest
