#include "cli/version_text.h"

#include <fmt/format.h>

#include "core/version.h"
#include "cuda/version.h"

namespace ios::cli {

std::string version_text(std::string_view program) {
  const cuda::CudaVersions cuda = cuda::cuda_versions();
  return fmt::format(
      "{} {} (commit {})\n"
      "built with:  CUDA {}, cuDNN {}\n"
      "run time:    CUDA driver {}, cuDNN {}",
      program, version(), source_commit(), cuda.built_cuda, cuda.built_cudnn, cuda.driver_cuda,
      cuda.loaded_cudnn);
}

}  // namespace ios::cli
