// The CUDA and cuDNN versions ios was built against and the ones found at run
// time, for --version. Plain C++: lib/cuda_stub answers for builds without CUDA.
#pragma once

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

}  // namespace ios::cuda
