// The work of a schedule unit, independent of any device: the kernels it
// launches and, per kernel, floating-point operations, bytes moved and the
// parallelism it offers. The simulated cost model turns this into time; the
// formulas are in docs/cost-model.md ("Work of a unit").
#pragma once

#include <string>
#include <vector>

#include "ir/element_type.h"
#include "sched/merge.h"
#include "sched/unit_graph.h"

namespace ios::cost {

// One kernel launch. Element-wise nodes fuse into the kernel of the compute
// node before them (prologue ones into the first); views (Flatten, Reshape)
// and the zero-copy Concat launch nothing.
struct KernelWork {
  std::string what;            // the node that starts the kernel, e.g. "Conv", for messages
  double flops = 0.0;          // a multiply-add counts as 2
  // Bytes at each tensor's element type (ir::bytes_of: 4 for float32, 2 for
  // float16 and bfloat16).
  double bytes_read = 0.0;     // activations read from outside the kernel + weights
  double bytes_written = 0.0;  // tensors that leave the kernel
  double outputs = 0.0;        // output elements of the kernel's main node: the parallelism
  double reduction = 1.0;      // reduction length per output (Cin/g*kh*kw for a conv, K for a GEMM)
  bool matmul_like = false;    // Conv with group 1, Gemm, MatMul: may use tensor cores
  // The element type of the main node's output: a matmul-like kernel of a
  // 16-bit type runs on that type's tensor cores whatever the precision
  // (float32 ones follow the math mode, ir::MathMode).
  ir::ElementType type = ir::ElementType::kFloat32;
  // Convolution shapes libraries treat apart (DeviceProfile's per-shape knobs):
  bool winograd = false;    // 3x3, stride 1, dilation 1, group 1: cuDNN's Winograd kernels apply
  bool asymmetric = false;  // 1xk or kx1 (k > 1): below the efficiency of square kernels

  double bytes() const { return bytes_read + bytes_written; }
};

struct UnitWork {
  std::vector<KernelWork> kernels;  // in launch order; empty for zero-cost units

  double flops() const;
  double bytes() const;
  // Work items the unit offers at once: the most outputs of any of its kernels.
  double parallelism() const;
};

// Work of one unit of a graph formed from an IR (graph.ir() must be set).
UnitWork unit_work(const sched::UnitGraph& graph, sched::UnitId unit);

// Work of a merged convolution (one kernel): the merged kernel's FLOPs
// (zero-padded taps included), the shared input read once, the merged weights
// and bias, the members' fused epilogues and their outputs.
UnitWork merged_conv_work(const sched::UnitGraph& graph, const sched::MergeSpec& spec);

// Work of a merged matrix product (one kernel): 2 * rows * K * sum N_i FLOPs,
// the shared input read once, the assembled weights [K, sum N_i] and bias,
// the members' fused epilogues and their outputs, plus the merged temporary
// written and read back once (the backends copy each member's columns out of
// it before its epilogue).
UnitWork merged_matmul_work(const sched::UnitGraph& graph, const sched::MergeSpec& spec);

// merged_conv_work or merged_matmul_work, by the spec's kind.
UnitWork merged_work(const sched::UnitGraph& graph, const sched::MergeSpec& spec);

// Which nodes are element-wise (they fuse into the kernel of the compute
// node before them) and the FLOPs of one node come from the operator table:
// ir::is_elementwise and ir::node_flops (ir/op_info.h). The CUDA lowering
// fuses by the same predicate, so the kernels counted here are the kernels it
// launches.

}  // namespace ios::cost
