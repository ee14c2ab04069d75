// What the Runtime needs from an operation (program.h's Operation) on the
// device: a GpuOp is what one operation issues on a stream, built once with
// its kernel parameters and device pointers; a Binding hands an operation's
// launch the pointers of the values it declared (and of constants); a
// Preparation is what an operation may decide on the device before memory is
// planned. Also the helpers several operations' launches share.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/cuda_types.h"
#include "cuda/kernels.h"
#include "cuda/program.h"

namespace ios::cuda {

class Context;

// What one GPU operation needs at issue time.
struct IssueContext {
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

class GpuOp {
 public:
  virtual ~GpuOp() = default;
  virtual void issue(const IssueContext& ctx) const = 0;
  virtual std::string describe() const = 0;
};

struct RuntimeStats {
  int convolutions = 0;
  int fused_convolutions = 0;
  int graph_convolutions = 0;  // by a graph-API plan
  int legacy_fallbacks = 0;    // graph API asked, no plan built: the legacy call
  int plans_from_cache = 0;    // graph plans chosen by the plan cache
  size_t weights_bytes = 0;
  size_t arena_bytes = 0;
  size_t arena_unshared_bytes = 0;
  size_t workspace_bytes = 0;
};

// Operation::prepare's view of the Runtime being built.
struct Preparation {
  Context& ctx;
  Program& program;
  size_t& workspace;  // the launch's stream's cuDNN workspace: raise it to what the operation needs
  RuntimeStats& stats;
};

// The device pointers one operation's launch may use: those of the values
// it declared (Operation::uses), writable only where it declared a write,
// and of every constant. Any other value is an internal error, so the
// memory plan, which places buffers by the same declarations, cannot miss a
// buffer an operation touches. Pointers are untyped: each value and constant
// is stored in its element type (type()).
class Binding {
 public:
  Binding(const Program& program, const std::vector<void*>& values,
          const std::vector<const void*>& constants, Uses uses);
  const Program& program() const { return program_; }
  const Value& value(int v) const { return program_.values.at(static_cast<size_t>(v)); }
  void* out(int v) const;              // a value declared written
  const void* in(int v) const;         // a value declared read or written
  const void* in(const Ref& r) const;  // a value as in(), a constant, or null for none
  const void* constant(int c) const { return constants_.at(static_cast<size_t>(c)); }
  // Shape and batch stride of an operand (a constant is dense).
  std::pair<ir::Shape, int64_t> layout(const Ref& r) const;
  // The element type of a value, a constant or an operand (float32 for none).
  ir::ElementType type(int v) const { return value(v).type; }
  ir::ElementType type(const Ref& r) const;

 private:
  const Program& program_;
  const std::vector<void*>& values_;
  const std::vector<const void*>& constants_;
  Uses uses_;
};

// Elements per item (all dimensions but the first).
int64_t item_of(const ir::Shape& shape);
// Element strides of a tensor dense inside each item, `batch_stride` apart.
std::vector<int64_t> strides_of(const ir::Shape& shape, int64_t batch_stride);
// Copies `v` into a kernel parameter array of kernels::kMaxDims entries.
void fill_dims(int64_t* out, const std::vector<int64_t>& v, const char* what);
void set_tensor4d(cudnnTensorDescriptor_t desc, int64_t n, int64_t c, int64_t h, int64_t w,
                  int64_t ns, int64_t cs, int64_t hs, int64_t ws,
                  ir::ElementType type = ir::ElementType::kFloat32);
// A tensor descriptor of any rank cuDNN takes (4 or 5): `dims` dense inside
// each item, items `batch_stride` apart.
void set_tensor_nd(cudnnTensorDescriptor_t desc, const ir::Shape& dims, int64_t batch_stride,
                   ir::ElementType type = ir::ElementType::kFloat32);
// The dimensions cuDNN is given for a tensor of N, C and 1 to 3 spatial axes.
// cuDNN's tensors, filters, convolutions and pooling windows have two or three
// spatial axes (4-D or 5-D tensors), so N,C,L is passed as N,C,1,L: the 2-D
// window with H = 1 (kernel 1, stride 1, dilation 1, no pad on H) computes
// exactly the 1-D one, with the same memory layout. Ranks 4 and 5 are as is.
ir::Shape cudnn_dims(const ir::Shape& shape);
// A per-spatial-axis attribute (kernel, stride, pads...) for cudnn_dims:
// `fill` put in front of a 1-D one's single value.
ir::Dims cudnn_axes(const ir::Dims& values, int64_t fill);
// `p` advanced by `elements` elements of `type`.
const void* offset_ptr(const void* p, int64_t elements, ir::ElementType type);
void* offset_ptr(void* p, int64_t elements, ir::ElementType type);

// A launch of one of the backend's own kernels (cuda/kernels.h): its
// parameters, its launcher, and what plans and error messages call it.
template <typename Params, cudaError_t (*Launch)(const Params&, cudaStream_t)>
class OwnKernelGpuOp final : public GpuOp {
 public:
  OwnKernelGpuOp(const Params& p, std::string description)
      : p_(p), description_(std::move(description)) {}
  void issue(const IssueContext& c) const override {
    const cudaError_t status = Launch(p_, c.stream);
    if (status != cudaSuccess)
      detail::throw_cuda_error(status, description_.c_str(), __FILE__, __LINE__);
  }
  std::string describe() const override { return description_; }

 private:
  Params p_;
  std::string description_;
};

// Uploads constant `c` to `dst` on `stream`, converted to its element type
// (a 16-bit constant is rounded on the host into a temporary that the
// pageable copy has staged by the time this returns). Returns the bytes
// written on the device.
size_t upload_constant(void* dst, const Constant& c, cudaStream_t stream);

// --- Shared by several operations' launches -----------------------------------

// A strided copy (op_copy.cpp) of elements of `type`: cudaMemcpyAsync,
// cudaMemcpy2DAsync or the copy kernel, whichever the coalesced dimensions
// allow. Convolutions stage strided tensors with it.
std::unique_ptr<GpuOp> make_copy(const void* src, void* dst, std::vector<int64_t> dims,
                                 std::vector<int64_t> src_strides,
                                 std::vector<int64_t> dst_strides, ir::ElementType type);

// Element-wise kernel parameters (op_elementwise.cpp); a convolution whose
// fused epilogue cuDNN rejects runs it through them.
kernels::EwParams ew_frame(const ir::Shape& out, void* y, int64_t y_batch_stride,
                           ir::ElementType y_type = ir::ElementType::kFloat32);
// How an operand of `shape` (stored dense per item, `batch_stride` apart, in
// `type`) is read when broadcast to `out` (ONNX rules: right-aligned, size-1
// stretches).
kernels::EwOperand make_operand(const void* ptr, const ir::Shape& shape, int64_t batch_stride,
                                const ir::Shape& out, ir::ElementType type = ir::ElementType::kFloat32);
void add_step(kernels::EwParams& p, ir::OpKind kind, float p0, float p1,
              const kernels::EwOperand* operand, bool operand_first = false);

}  // namespace ios::cuda
