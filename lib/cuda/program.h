// Program: an ExecPlan lowered to the GPU operations of the CUDA backend, in
// backend-neutral terms (no CUDA types, so the lowering and the memory plan
// are tested on machines without a GPU).
//
// Storage comes from the storage plan (exec/storage_plan.h), the same one
// the CPU executor uses: each of its storages is a Buffer here (same index),
// each activation a Value at its Region (zero-copy concat slices, merged
// convolutions' slices, in-place epilogues). The lowering adds scratch
// buffers of its own (explicit pads, dense copies) after them. Buffers are
// then placed in one arena by liveness (exec/memory_layout.h).
//
// The lowering itself is split by concept: lowering.h (the Lowerer: values,
// constants, element-wise chains), lower_conv.cpp, lower_compute.cpp and
// lower_data.cpp (per-operator lowerings), lowering_table.cpp (which
// function lowers which ir::OpKind: the backend's kernel table).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "exec/memory_layout.h"
#include "exec/plan.h"
#include "exec/region.h"
#include "ir/graph.h"
#include "sched/unit_graph.h"

namespace ios::cuda {

// Buffers start at multiples of this many bytes (exec/memory_layout.h places them so).
constexpr int64_t kBufferAlignment = 256;

// Byte alignment of a float at `element_offset` in a buffer: the largest
// power of two dividing its byte offset, capped at kBufferAlignment.
constexpr int64_t pointer_alignment(int64_t element_offset) {
  const int64_t bytes = element_offset * 4;
  if (bytes % kBufferAlignment == 0) return kBufferAlignment;
  return bytes & -bytes;
}

// An activation (or a scratch tensor of the lowering): its strided layout
// (exec/region.h) at `offset` elements into buffer `buffer`.
struct Value : exec::StridedShape {
  std::string name;
  int buffer = -1;
  int64_t offset = 0;  // elements from the buffer's start
};

struct Buffer {
  std::string name;
  int64_t elements = 0;
  // Graph inputs and outputs (and, for stage measurement, a stage's inputs and
  // outputs) keep their own memory: they are read and written between runs.
  bool persistent = false;
};

struct Constant {
  std::string name;
  ir::Shape shape;
  std::shared_ptr<const std::vector<float>> data;
};

// An operand: a value or a constant.
struct Ref {
  enum class Kind { kNone, kValue, kConstant };
  Kind kind = Kind::kNone;
  int index = -1;
  static Ref value(int i) { return {Kind::kValue, i}; }
  static Ref constant(int i) { return {Kind::kConstant, i}; }
  bool is_value() const { return kind == Kind::kValue; }
  bool is_constant() const { return kind == Kind::kConstant; }
  explicit operator bool() const { return kind != Kind::kNone; }
};

// y = conv(x, w), cuDNN. Pads are symmetric (asymmetric padding is made
// explicit by a PadOp in front). With `fused`, y = relu(conv + bias [+ z]) in
// one cudnnConvolutionBiasActivationForward (if cuDNN rejects the fused call
// for these shapes, the engine runs the convolution and then that epilogue
// with its own kernel); otherwise the bias and the rest of the unit's
// element-wise chain are an EwOp that follows, in place on y.
struct ConvOp {
  int x = -1, y = -1;
  int weight = -1;  // constant [M, C/group, kh, kw]
  int bias = -1;    // constant [M] (fused convolutions always have one)
  int z = -1;       // value added before the ReLU (fused only)
  bool relu = false;
  bool fused = false;
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, dilation{1, 1}, pad{0, 0};
  int64_t group = 1;
  // Filled by the engine when cuDNN supports no algorithm for a strided x or
  // y: x is first copied to `x_dense`, y computed in `y_dense` then copied.
  int x_dense = -1, y_dense = -1;
  std::string label;  // for messages: the node's output tensor
};

// Steps one element-wise kernel launch applies (kernels::kMaxEwSteps, which
// also bounds its operands). The lowering splits longer chains into several
// EwOps, the later ones in place on y.
constexpr int kMaxEwStepsPerOp = 8;
struct EwStep {
  ir::OpKind kind = ir::OpKind::kRelu;  // an element-wise operator of ir/elementwise.h
  float p0 = 0.0f, p1 = 0.0f;           // Clip: min, max; HardSigmoid: alpha, beta
  Ref operand;                 // binary operators: broadcast to y's shape (ONNX rules)
  // The operand is the left one: y = f(operand, v), as in c - x or c / x
  // (the chain value v is the node's input 1).
  bool operand_first = false;
};
// y = steps(x), element-wise; x broadcast to y's shape. y may be x (in place).
// At most kMaxEwStepsPerOp steps.
struct EwOp {
  Ref x;
  int y = -1;
  std::vector<EwStep> steps;
};

struct PoolOp {
  enum class Mode { kMax, kAverageIncludePad, kAverageExcludePad };
  Mode mode = Mode::kMax;
  int x = -1, y = -1;
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  bool ceil_mode = false;
  // cuDNN when pads are symmetric and the output size is cuDNN's; otherwise
  // the backend's own kernel.
  bool use_cudnn = true;
};

struct SoftmaxOp {
  int x = -1, y = -1;
  int64_t axis = 1;
};

// y[b] = alpha * A[b] * B[b] + beta * C, with element strides per operand
// (transposes and broadcast batches are strides). Own kernel, FP32.
struct GemmOp {
  Ref a, b, c;
  int y = -1;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  float alpha = 1.0f, beta = 0.0f;
  bool trans_a = false, trans_b = false;
  // Batch handling for MatMul: per operand whether its batch index advances.
  bool a_batched = false, b_batched = false;
};

// dst[i] = src[src_offset + sum_d i_d * src_strides[d]] over `dims`, written
// at dst_offset + sum_d i_d * dst_strides[d] (elements, relative to the
// values' first elements). Slice, Split, Transpose, Reshape, concat copies.
struct CopyOp {
  int src = -1, dst = -1;
  std::vector<int64_t> dims, src_strides, dst_strides;
  int64_t src_offset = 0, dst_offset = 0;
};

struct PadOp {
  enum class Mode { kConstant, kReflect, kEdge };
  Mode mode = Mode::kConstant;
  int x = -1, y = -1;
  std::vector<int64_t> begin;  // per dimension
  float value = 0.0f;
};

// Mean over `axes` of x (any rank); y holds the kept dimensions.
struct ReduceOp {
  int x = -1, y = -1;
  std::vector<int64_t> axes;
};

// Resize of H and W of a 4-D x into y (own kernel).
struct ResizeOp {
  int x = -1, y = -1;
  ir::ResizeAttrs attrs;
};

// LayerNormalization of dense x into dense y over the dims from `axis` on
// (own kernel); scale and bias are constants of one value per normalized
// element (bias may be absent).
struct LayerNormOp {
  int x = -1, y = -1;
  int64_t axis = 1;
  float epsilon = 1e-5f;
  Ref scale, bias;
};

using Op = std::variant<ConvOp, EwOp, PoolOp, SoftmaxOp, GemmOp, CopyOp, PadOp, ReduceOp, ResizeOp,
                        LayerNormOp>;

struct Launch {
  std::string name;  // unit id(s)
  int stream = 0;
  std::vector<sched::UnitId> units;
  bool merged = false;
  std::vector<Op> ops;
};

struct Program {
  std::vector<Value> values;
  std::vector<Buffer> buffers;
  std::vector<Constant> constants;
  std::vector<Launch> launches;  // indexed like ExecPlan::kernels
  std::vector<exec::Step> steps; // kLaunch steps name launches
  int num_streams = 1;
  int num_events = 0;
  // Host-visible tensors: every input must be set, every output is read back.
  std::vector<std::pair<std::string, int>> inputs, outputs;
  int concat_inputs_zero_copy = 0;
  int concat_inputs_copied = 0;

  // A dense value in a buffer of its own, read and written by `launch` only
  // (a scratch tensor inside one launch).
  int add_temp(const std::string& name, const ir::Shape& shape);
  // Buffer index -> launches that read or write any value in it.
  std::vector<std::vector<int>> buffer_users() const;
  // What the memory plan places: one request per buffer (bytes, persistence, users).
  std::vector<exec::MemoryRequest> memory_requests() const;
  int num_ops() const;
};

// Constants the lowering derives (folded BatchNorm scale/shift, merged
// convolution weights and biases, zero biases), by their names, which are
// unique per graph and content.
using DerivedConstants = std::unordered_map<std::string, std::shared_ptr<const std::vector<float>>>;

struct LowerOptions {
  // Stage measurement: `plan` covers some units only. Activations read but
  // not produced by the plan become inputs; values read by units outside the
  // plan become outputs. (With a full plan both rules give exactly the graph
  // inputs and outputs.)
  bool partial = false;
  // When set, derived constants are shared with earlier lowerings of the same
  // graph: the same host data, so a device pool keeps them resident instead
  // of uploading them for every stage.
  DerivedConstants* derived = nullptr;
};

// Lowers `plan` (from exec::lower or a measured stage) over `graph`, which
// must have an IR. Throws UserError for operators or attribute combinations
// the CUDA backend does not run, naming the node.
Program lower_program(const sched::UnitGraph& graph, const exec::ExecPlan& plan,
                      const LowerOptions& options = {});

// Whether the CUDA backend lowers operator `op` (its kernel table,
// lowering_table.cpp); a graph holding another operator is refused by name.
bool has_lowering(ir::OpKind op);

// Operand names for messages and describe().
std::string describe_program(const Program& program);

}  // namespace ios::cuda
