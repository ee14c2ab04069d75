// The CUDA and cuDNN versions ios was built against and the ones found at run
// time, for --version, and the rule that says whether they can run ios.
// Plain C++: lib/cuda_stub answers for builds without CUDA.
#pragma once

#include <cstddef>
#include <string>

namespace ios::cuda {

struct CudaVersions {
  std::string built_cuda;    // CUDA runtime headers at build time, "13.0"; "none" without CUDA
  std::string built_cudnn;   // cuDNN headers at build time, "9.19.0"; "none" without CUDA
  std::string driver_cuda;   // CUDA version the installed driver supports; "none" when no driver
  std::string loaded_cudnn;  // cuDNN library loaded at run time; "none" without CUDA
};

// Never throws and needs no device: only version queries are made.
CudaVersions cuda_versions();

// The versions that decide whether ios can run here, as the CUDA and cuDNN
// APIs report them (major * 1000 + minor * 10 for CUDA, major * 10000 +
// minor * 100 + patch for cuDNN).
struct RuntimeVersions {
  int driver = 0;             // cudaDriverGetVersion: the newest CUDA the driver supports
  int runtime = 0;            // CUDART_VERSION: the CUDA runtime ios was built with
  size_t cudnn = 0;           // cudnnGetVersion: the cuDNN loaded in the process
  int cudnn_built_major = 0;  // CUDNN_MAJOR: the cuDNN ios was built with
  size_t cudnn_cudart = 0;    // cudnnGetCudartVersion: the CUDA the loaded cuDNN was built for (0: unknown)
};

// Why these versions cannot run ios, as one line naming the versions and
// the fix, or empty when they can: a driver older than the runtime, a cuDNN
// of another major version, or a cuDNN built for another CUDA major version
// (a cuDNN wheel for CUDA 12 next to a CUDA 13 runtime). Pure (checked
// before any work by the device probe; host-tested with faked versions).
// Inline: the CUDA build and lib/cuda_stub share it.
inline std::string version_problem(const RuntimeVersions& v) {
  auto cuda = [](long long x) { return std::to_string(x / 1000) + "." + std::to_string((x % 1000) / 10); };
  auto cudnn = [](size_t x) {
    return std::to_string(x / 10000) + "." + std::to_string((x % 10000) / 100) + "." + std::to_string(x % 100);
  };
  if (v.driver < v.runtime) {
    return "the NVIDIA driver supports CUDA " + cuda(v.driver) + " but ios was built with CUDA " + cuda(v.runtime) +
           "; update the driver";
  }
  if (v.cudnn / 10000 != static_cast<size_t>(v.cudnn_built_major)) {
    return "cuDNN " + cudnn(v.cudnn) + " is loaded but ios was built with cuDNN " +
           std::to_string(v.cudnn_built_major) + "; install cuDNN " + std::to_string(v.cudnn_built_major);
  }
  if (v.cudnn_cudart != 0 && v.cudnn_cudart / 1000 != static_cast<size_t>(v.runtime / 1000)) {
    return "the loaded cuDNN " + cudnn(v.cudnn) + " was built for CUDA " +
           cuda(static_cast<long long>(v.cudnn_cudart)) + " but ios uses CUDA " + cuda(v.runtime) +
           "; install the cuDNN build for CUDA " + std::to_string(v.runtime / 1000) + " (e.g. nvidia-cudnn-cu" +
           std::to_string(v.runtime / 1000) + ")";
  }
  return "";
}

}  // namespace ios::cuda
