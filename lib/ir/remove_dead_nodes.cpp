// The import pass ir::remove_dead_nodes (declared and described in ir/passes.h).
#include "ir/passes.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <utility>

#include "core/error.h"
#include "ir/pass_util.h"

namespace ios::ir {

using namespace pass_util;

int remove_dead_nodes(Graph& graph) {
  int removed = 0;
  for (;;) {
    std::vector<bool> dead(graph.num_nodes(), false);
    int round = 0;
    for (size_t n = 0; n < graph.num_nodes(); ++n) {
      bool used = false;
      for (TensorId t : graph.node(static_cast<NodeId>(n)).outputs) {
        used = used || !graph.tensor(t).consumers.empty() || graph.is_graph_output(t);
      }
      if (!used) {
        dead[n] = true;
        ++round;
      }
    }
    if (!round) return removed;
    removed += round;
    graph.compact(dead);
  }
}

}  // namespace ios::ir
