// The import passes in the order they run; each pass is in its own file
// (fold_batchnorm.cpp, fold_pad.cpp, flatten_concat.cpp,
// fuse_layer_norm.cpp, fuse_gelu.cpp, fuse_mish.cpp, remove_dead_nodes.cpp).
#include "ir/passes.h"

namespace ios::ir {

PassStats run_import_passes(Graph& graph) {
  PassStats stats;
  stats.batchnorm_folded = fold_batchnorm(graph);
  stats.pads_folded = fold_pad(graph);
  stats.concats_flattened = flatten_concat(graph);
  stats.layer_norms_fused = fuse_layer_norm(graph);
  stats.gelus_fused = fuse_gelu(graph);
  stats.mishes_fused = fuse_mish(graph);
  stats.dead_removed = remove_dead_nodes(graph);
  return stats;
}

}  // namespace ios::ir
