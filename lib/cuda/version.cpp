#include "cuda/version.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <fmt/format.h>

namespace ios::cuda {

CudaVersions cuda_versions() {
  CudaVersions v;
  v.built_cuda = fmt::format("{}.{}", CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
  v.built_cudnn = fmt::format("{}.{}.{}", CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
  int driver = 0;
  // Without a driver this fails or reports 0; either way there is none to name.
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
    cudaGetLastError();
    v.driver_cuda = "none (no NVIDIA driver found)";
  } else {
    v.driver_cuda = fmt::format("{}.{}", driver / 1000, (driver % 1000) / 10);
  }
  const size_t cudnn = cudnnGetVersion();
  v.loaded_cudnn = fmt::format("{}.{}.{}", cudnn / 10000, (cudnn % 10000) / 100, cudnn % 100);
  return v;
}

}  // namespace ios::cuda
