// libFuzzer target for Einsum equations through the importer: a model of
// one or two float inputs and one Einsum node whose equation is the input's
// bytes (after two option bytes) goes through the whole import (ONNX's
// checker and shape inference, ios's Einsum inference and lowering, the IR
// passes) and unit formation. Option byte 0: the operands' count and ranks;
// byte 1: their dimensions, and whether the model is opset 18 with a Split
// of num_outputs before the Einsum (so that the opset adapter's inference
// runs too). Any equation must give a graph or a UserError.
// Built with -DIOS_FUZZ=ON; scripts/fuzz.sh runs it.
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "onnx/importer.h"
#include "sched/unit_graph.h"

namespace {

void add_input(::onnx::GraphProto& graph, const std::string& name, int rank, int dim_seed) {
  auto* input = graph.add_input();
  input->set_name(name);
  auto* type = input->mutable_type()->mutable_tensor_type();
  type->set_elem_type(::onnx::TensorProto::FLOAT);
  for (int d = 0; d < rank; ++d)
    type->mutable_shape()->add_dim()->set_dim_value(1 + (dim_seed + d) % 3);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ios::set_verbosity(ios::Verbosity::kQuiet);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 4096) return 0;
  const int operands = 1 + (data[0] & 1);
  const int rank_a = (data[0] >> 1) & 7, rank_b = (data[0] >> 4) & 7;
  const int dims = data[1] & 7;
  const bool opset18 = (data[1] & 8) != 0;
  const std::string equation(reinterpret_cast<const char*>(data + 2), size - 2);

  ::onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(opset18 ? 18 : 17);
  auto& graph = *model.mutable_graph();
  graph.set_name("einsum");
  add_input(graph, "a", rank_a + (opset18 ? 1 : 0), dims);
  if (operands == 2) add_input(graph, "b", rank_b, dims + 1);
  std::string first = "a";
  if (opset18) {  // a Split of num_outputs (opset 18): the adapter infers ranks first
    auto* split = graph.add_node();
    split->set_op_type("Split");
    split->add_input("a");
    split->add_output("a0");
    split->add_output("a1");
    auto* axis = split->add_attribute();
    axis->set_name("axis");
    axis->set_type(::onnx::AttributeProto::INT);
    axis->set_i(0);
    auto* outputs = split->add_attribute();
    outputs->set_name("num_outputs");
    outputs->set_type(::onnx::AttributeProto::INT);
    outputs->set_i(2);
    first = "a0";
    graph.add_output()->set_name("a1");
  }
  auto* node = graph.add_node();
  node->set_op_type("Einsum");
  node->add_input(first);
  if (operands == 2) node->add_input("b");
  node->add_output("y");
  auto* attribute = node->add_attribute();
  attribute->set_name("equation");
  attribute->set_type(::onnx::AttributeProto::STRING);
  attribute->set_s(equation);
  graph.add_output()->set_name("y");
  for (auto& output : *graph.mutable_output()) {
    output.mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return 0;
  try {
    const ios::onnx::ImportedModel imported =
        ios::onnx::import_model_from_bytes(bytes, "einsum.onnx");
    (void)ios::sched::UnitGraph::form(imported.graph);
  } catch (const ios::UserError&) {
    // Refused with a message: the expected outcome for most equations.
  }
  return 0;
}
