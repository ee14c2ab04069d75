// --version in a build without the CUDA backend.
#include "cuda/version.h"

namespace ios::cuda {

CudaVersions cuda_versions() {
  const std::string none = "none (built without CUDA)";
  return {none, none, none, none};
}

}  // namespace ios::cuda
