// The CUDA libraries' names of each element type (ir/element_type.h): one
// line per type, in the IR table's order, one column per library. The IR
// includes no CUDA header, so these columns live here, beside the code that
// passes them; the static_asserts below hold this table to the IR's, so a
// type added there does not compile here until it has its line.
#pragma once

#include <cudnn.h>
#include <library_types.h>

#include "ir/element_type.h"

namespace ios::cuda {

struct CudaElementType {
  ir::ElementType type;
  cudnnDataType_t cudnn;  // tensor and filter descriptors
  cudaDataType_t cublas;  // cuBLASLt matrix layouts
};

inline constexpr CudaElementType kCudaElementTypes[] = {
    {ir::ElementType::kFloat32, CUDNN_DATA_FLOAT, CUDA_R_32F},
    {ir::ElementType::kFloat16, CUDNN_DATA_HALF, CUDA_R_16F},
    {ir::ElementType::kBFloat16, CUDNN_DATA_BFLOAT16, CUDA_R_16BF},
};

namespace detail {
constexpr bool in_ir_order() {
  int i = 0;
  for (const CudaElementType& t : kCudaElementTypes) {
    if (static_cast<int>(t.type) != i++) return false;
  }
  return true;
}
}  // namespace detail

static_assert(sizeof kCudaElementTypes / sizeof kCudaElementTypes[0] == ir::kNumElementTypes,
              "every element type of ir/element_type.h needs its line in kCudaElementTypes");
static_assert(detail::in_ir_order(), "kCudaElementTypes must list the types in ir::ElementType's order");

// cuDNN's data type for an element type.
inline cudnnDataType_t cudnn_type(ir::ElementType type) {
  return kCudaElementTypes[static_cast<int>(type)].cudnn;
}

// cuBLASLt's data type for an element type.
inline cudaDataType_t cublas_type(ir::ElementType type) {
  return kCudaElementTypes[static_cast<int>(type)].cublas;
}

}  // namespace ios::cuda
