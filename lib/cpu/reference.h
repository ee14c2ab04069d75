// A plain IR interpreter: every node in topological order, one dense buffer
// per tensor, no schedule, no memory reuse, no views. The tests use it as a
// second reference next to ONNX Runtime and as the baseline the executor
// (executor.h) must reproduce bit for bit on any plan.
#pragma once

#include <map>
#include <string>

#include "exec/npy.h"
#include "ir/graph.h"

namespace ios::cpu {

// Runs `graph` on `inputs` (keyed by ONNX input name; every graph input must
// be given with its exact shape) and returns every graph output by name.
std::map<std::string, exec::HostTensor> run_graph_reference(
    const ir::Graph& graph, const std::map<std::string, exec::HostTensor>& inputs, int threads = 1);

// Checks that `inputs` holds exactly the graph's inputs with their shapes;
// throws UserError naming the input and the expected shape otherwise.
void check_inputs(const ir::Graph& graph, const std::map<std::string, exec::HostTensor>& inputs);

}  // namespace ios::cpu
