// Schedule units: the DAG the schedulers order.
//
// A unit is one compute operator of the IR with the element-wise work around
// it fused in (bias, folded BatchNorm, ReLU, Clip, Sigmoid, ... as epilogue;
// ReLU / input sums as prologue), or an IOS compound unit (ReLU -> depthwise
// conv -> pointwise conv). The rules are in docs/unit-formation.md and
// implemented by form_units() in unit_formation.cpp. Unit ids are stable
// across runs: the ONNX name of the unit's output tensor.
//
// UnitId order is a topological order. Blocks are contiguous UnitId ranges
// between cut points (see blocks.cpp); the DP runs on one block at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/bitset.h"
#include "ir/graph.h"

namespace ios::sched {

using UnitId = int32_t;

enum class UnitKind {
  kConv,         // Conv (+ fused prologue/epilogue)
  kSepConv,      // [ReLU ->] depthwise Conv -> pointwise 1x1 Conv (IOS's ReLU-SepConv)
  kPool,         // MaxPool, AveragePool, GlobalAveragePool, ReduceMean, Resize, LayerNormalization
  kMatMul,       // Gemm, MatMul
  kConcat,       // channel concat: zero-copy, producers write into its slices
  kElementwise,  // Add/Mul of two activations, standalone activation or BatchNorm
  kLayout,       // Flatten, Reshape, Transpose, Slice, Split, Pad
  kSoftmax,
};

std::string_view unit_kind_name(UnitKind kind);

struct Unit {
  std::string id;                   // stable: ONNX name of the unit's output tensor
  UnitKind kind = UnitKind::kConv;
  std::vector<ir::NodeId> nodes;    // IR nodes in execution order
  ir::NodeId anchor = ir::kNone;    // the compute node (a Conv for kConv/kSepConv's last conv)
  std::vector<ir::TensorId> inputs;   // activations read from outside the unit
  std::vector<ir::TensorId> outputs;  // tensors the unit makes that others read / graph outputs
};

// A block: the units between two cut points (or a part of a wide region),
// a contiguous range [begin, end) of UnitIds.
struct Block {
  UnitId begin = 0;
  UnitId end = 0;
  int width = 0;  // largest antichain (Dilworth, via bipartite matching)
  bool split_by_cap = false;  // a part of a region wider than the size cap
  int size() const { return end - begin; }
};

struct FormationOptions {
  bool fuse_epilogues = true;    // element-wise successors join their producer
  bool fuse_sepconv = true;      // [ReLU ->] depthwise -> pointwise becomes one unit
  bool fuse_input_sums = true;   // an Add feeding a unit's prologue ReLU joins it
  int max_block_units = 40;      // cap on units per block; wider regions are split
  // Cap on the IOS paper's bound on the DP transitions of a block,
  // C(n/d + 2, 2)^d (Section 4.2), as log10: a part above it is split
  // further. 9 keeps the search of NASNet-A's two-cell regions (30+ units,
  // width 8-10) to seconds; docs/unit-formation.md has the measurements.
  double max_block_log10_bound = 9.0;
};

class UnitGraph {
 public:
  // Builds units, edges, reachability and blocks (unit_formation.cpp).
  static UnitGraph form(const ir::Graph& graph, const FormationOptions& options = {});

  // For tests and synthetic workloads: a unit graph from explicit edges
  // (u -> v means v reads u's output), with no IR behind it.
  static UnitGraph from_edges(int num_units, const std::vector<std::pair<int, int>>& edges,
                              int max_block_units = 64, double max_block_log10_bound = 1e9);

  const ir::Graph* ir() const { return ir_; }  // null for synthetic graphs
  const std::vector<Unit>& units() const { return units_; }
  const Unit& unit(UnitId u) const { return units_.at(static_cast<size_t>(u)); }
  int size() const { return static_cast<int>(units_.size()); }
  const std::vector<UnitId>& preds(UnitId u) const { return preds_.at(static_cast<size_t>(u)); }
  const std::vector<UnitId>& succs(UnitId u) const { return succs_.at(static_cast<size_t>(u)); }
  // A path from -> to of length >= 1. Searched on demand (linear in the
  // units between them): a whole-graph closure would be quadratic in memory.
  bool reaches(UnitId from, UnitId to) const;
  std::optional<UnitId> find(std::string_view id) const;

  const std::vector<Block>& blocks() const { return blocks_; }
  int block_of(UnitId u) const;

  // The unit producing an IR tensor (kNone for inputs and weights).
  UnitId producer_unit(ir::TensorId t) const;

 private:
  void finish();  // edges -> cut points -> blocks
  // The blocks of the region between two cut points (unit_graph.cpp).
  std::vector<Block> split_region(UnitId begin, UnitId end) const;

  const ir::Graph* ir_ = nullptr;
  std::vector<Unit> units_;
  std::vector<std::vector<UnitId>> preds_, succs_;
  std::unordered_map<std::string, UnitId> by_id_;  // unit id -> UnitId, for find()
  std::vector<Block> blocks_;
  std::vector<int> block_of_;
  std::vector<UnitId> tensor_producer_;
  int max_block_units_ = 40;
  double max_block_log10_bound_ = 9.0;
};

// log10 of the IOS paper's bound C(n/d + 2, 2)^d on the transitions of a
// block with n units and width d.
double log10_search_bound(int units, int width);

// Width (largest antichain) of the sub-DAG on units [begin, end).
int block_width(const UnitGraph& graph, UnitId begin, UnitId end);

}  // namespace ios::sched
