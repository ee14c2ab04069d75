// Program: an ExecPlan lowered to the GPU operations of the CUDA backend, in
// backend-neutral terms (no CUDA types, so the lowering and the memory plan
// are tested on machines without a GPU).
//
// Storage comes from the storage plan (exec/storage_plan.h), the same one
// the CPU executor uses: each of its storages is a Buffer here (same index),
// each activation a Value at its Region (zero-copy concat slices, merged
// convolutions' slices, in-place epilogues). Scratch buffers (explicit
// pads, dense copies, staging) follow them (add_scratch). Buffers are then
// placed in one arena by liveness (exec/memory_layout.h).
//
// Each GPU operation is an Operation (below): one class per kind in its own
// file, op_<name>.cpp, holding its lowerings, the values it uses and its
// launch. lowering.h is the driver that turns plan launches into them,
// lowering_table.cpp the kernel table (which function lowers which
// ir::OpKind).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "exec/memory_layout.h"
#include "exec/plan.h"
#include "exec/region.h"
#include "ir/graph.h"
#include "sched/unit_graph.h"

namespace ios::cuda {

// Buffers start at multiples of this many bytes (exec/memory_layout.h places them so).
constexpr int64_t kBufferAlignment = 256;

// Byte alignment of an element of `element_bytes` bytes (4: float, 2: half
// and bfloat16) at `element_offset` in a buffer: the largest power of two
// dividing its byte offset, capped at kBufferAlignment.
constexpr int64_t pointer_alignment(int64_t element_offset, int64_t element_bytes = 4) {
  const int64_t bytes = element_offset * element_bytes;
  if (bytes % kBufferAlignment == 0) return kBufferAlignment;
  return bytes & -bytes;
}

// An activation (or a scratch tensor of the lowering): its strided layout
// (exec/region.h) at `offset` elements into buffer `buffer`, stored in its
// buffer's element type.
struct Value : exec::StridedShape {
  std::string name;
  int buffer = -1;
  int64_t offset = 0;  // elements from the buffer's start
  ir::ElementType type = ir::ElementType::kFloat32;
  int64_t alignment() const { return pointer_alignment(offset, ir::bytes_of(type)); }
};

struct Buffer {
  std::string name;
  int64_t elements = 0;
  ir::ElementType type = ir::ElementType::kFloat32;  // of every value in it (the storage plan's)
  int64_t bytes() const { return elements * ir::bytes_of(type); }
  // Graph inputs and outputs (and, for stage measurement, a stage's inputs and
  // outputs) keep their own memory: they are read and written between runs.
  bool persistent = false;
};

// A constant: float values on the host (exactly representable in `type` for
// the IR's weights), uploaded converted to `type`.
struct Constant {
  std::string name;
  ir::Shape shape;
  std::shared_ptr<const std::vector<float>> data;
  ir::ElementType type = ir::ElementType::kFloat32;
  int64_t bytes() const { return static_cast<int64_t>(data->size()) * ir::bytes_of(type); }
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

class GpuOp;        // launch.h: what runs on a stream
class Binding;      // launch.h: the device pointers an operation's launch may use
struct Preparation; // launch.h: device-side choices made before memory is planned
struct Program;

// The values an operation reads and writes, declared by the operation
// itself (Operation::uses): the memory plan's users of each buffer, and the
// only values whose device pointers its launch gets (Binding refuses any
// other), so an operation cannot use a buffer it did not declare.
struct Uses {
  std::vector<int> reads, writes;
  void read(int v) {
    if (v >= 0) reads.push_back(v);
  }
  void read(const Ref& r) {
    if (r.is_value()) reads.push_back(r.index);
  }
  void write(int v) {
    if (v >= 0) writes.push_back(v);
  }
};

// One GPU operation of a launch. Each kind is one class in its own file,
// op_<name>.cpp, with the lowerings that emit it and its launch; the ones
// other lowerings emit too (and the host tests inspect) are declared in
// operations.h. Lowering, describing and the memory plan are CUDA-free (and
// run on machines without a GPU); prepare() and launch() run in the Runtime.
class Operation {
 public:
  virtual ~Operation() = default;
  virtual void uses(Uses& uses) const = 0;
  // One line of describe_program() (without indentation).
  virtual std::string describe(const Program& program) const = 0;
  // Before memory is planned: device-dependent choices that may add
  // buffers (a convolution's algorithm and staging copies). Most have none.
  virtual void prepare(Preparation& /*prep*/) {}
  // What runs on the stream: the kernel or library call with its parameters
  // and device pointers.
  virtual std::unique_ptr<GpuOp> launch(const Binding& binding) const = 0;
};

struct Launch {
  std::string name;  // unit id(s)
  int stream = 0;
  std::vector<sched::UnitId> units;
  bool merged = false;
  std::vector<std::unique_ptr<Operation>> ops;
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

  // A scratch value: dense, in a non-persistent buffer of its own, used
  // inside one launch. The lowering's scratch is requested from the storage
  // plan (Lowerer::scratch), which sizes it with the plan's storages and
  // mirrors it here at the same index; a convolution's staging buffers,
  // chosen on the device after lowering (ConvOp::prepare), are added here
  // directly. Either way the memory plan places them by the launches whose
  // operations declare them (memory_requests()).
  int add_scratch(const std::string& name, const ir::Shape& shape,
                  ir::ElementType type = ir::ElementType::kFloat32);
  // Names for describe(): a value's, "const <name>" for a constant, "-" for none.
  std::string value_name(int v) const;
  std::string ref_name(const Ref& r) const;
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
