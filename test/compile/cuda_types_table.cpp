// Compiled twice by the "compile:" tests (test/CMakeLists.txt), where CUDA is
// built: as shipped, and with IOS_TEST_EXTRA_ELEMENT_TYPE, a fourth line in
// the element-type table (ir/element_type.h). The second must not compile:
// the CUDA libraries' table (cuda/cuda_types.h) is held to the IR's length
// by a static_assert. Nothing here is run.
#include "cuda/cuda_types.h"

namespace ios::cuda {

cudnnDataType_t cudnn_type_of_every_type() {
  int sum = 0;
  for (const ir::ElementTypeInfo& t : ir::kElementTypes) sum += static_cast<int>(cudnn_type(t.type));
  return static_cast<cudnnDataType_t>(sum);
}

}  // namespace ios::cuda
