// The torchvision CNNs exported by onnx_models/export_models.py (scripts/
// setup.sh runs it before the tests): each must import with the IR
// invariants the rest of ios relies on. Expected operator counts come from
// the ONNX file itself, read independently here with protobuf.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "core/error.h"
#include "core/sha256.h"
#include "model_builder.h"
#include "onnx/importer.h"
#include "test_paths.h"

namespace {

using ios::ir::Graph;
using ios::ir::OpKind;

const std::vector<std::string> kModels = {"inception_v3", "squeezenet1_1", "resnet50",
                                          "mobilenet_v2", "densenet121",   "googlenet"};

// The exported model: <name>.onnx (static batch 1) or <name>-bdyn.onnx
// (symbolic batch, imported with --batch 1).
struct Found {
  std::string path;
  ios::onnx::ImportOptions options;
};

Found require_model(const std::string& name) {
  const auto fixed = ios::test::model(name + ".onnx");
  const auto dynamic = ios::test::model(name + "-bdyn.onnx");
  Found found;
  if (std::filesystem::exists(fixed)) {
    found.path = fixed.string();
  } else {
    INFO("missing " << fixed.string() << " and " << dynamic.string()
                    << ": run scripts/setup.sh (it exports the torchvision models)");
    REQUIRE(std::filesystem::exists(dynamic));
    found.path = dynamic.string();
    found.options.batch = 1;
  }
  return found;
}

::onnx::ModelProto load_proto(const std::string& path) {
  ::onnx::ModelProto proto;
  const std::string bytes = ios::test::read_bytes(path);
  REQUIRE(proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  return proto;
}

std::map<std::string, int> ir_histogram(const Graph& g) {
  std::map<std::string, int> h;
  for (const auto& n : g.nodes()) ++h[std::string(ios::ir::op_name(n.op))];
  return h;
}

// The structural guarantees of import, checked on any graph.
void check_invariants(const Graph& g) {
  for (size_t id = 0; id < g.num_nodes(); ++id) {
    const auto& node = g.node(static_cast<ios::ir::NodeId>(id));
    for (auto in : node.inputs) {
      // NodeId order is topological.
      CHECK(g.tensor(in).producer < static_cast<ios::ir::NodeId>(id));
    }
    if (node.op == OpKind::kBatchNorm) {
      const auto p = g.tensor(node.inputs.at(0)).producer;
      const bool after_private_conv = p != ios::ir::kNone && g.node(p).op == OpKind::kConv &&
                                      g.tensor(node.inputs[0]).consumers.size() == 1;
      CHECK_FALSE(after_private_conv);
    }
    if (node.op == OpKind::kConcat) {
      for (auto in : node.inputs) {
        const auto p = g.tensor(in).producer;
        const bool nested = p != ios::ir::kNone && g.node(p).op == OpKind::kConcat &&
                            g.node(p).attr<ios::ir::AxisAttrs>().axis == node.attr<ios::ir::AxisAttrs>().axis &&
                            g.tensor(in).consumers.size() == 1 && !g.is_graph_output(in);
        CHECK_FALSE(nested);
      }
    }
  }
  for (const auto& t : g.tensors()) {
    INFO("tensor " << t.name << " shape " << ios::ir::to_string(t.shape));
    if (t.is_constant()) {
      CHECK(static_cast<int64_t>(t.data->size()) == ios::ir::num_elements(t.shape));
    } else {
      CHECK_FALSE(t.shape.empty());
      for (int64_t d : t.shape) CHECK(d > 0);
    }
  }
}

// The shape the file declares, a symbolic batch read as `batch`.
ios::ir::Shape declared_shape(const ::onnx::ValueInfoProto& info, int64_t batch) {
  ios::ir::Shape s;
  for (const auto& d : info.type().tensor_type().shape().dim()) s.push_back(d.has_dim_value() ? d.dim_value() : batch);
  return s;
}

}  // namespace

TEST_CASE("torchvision models import as folded static flat graphs", "[onnx][models]") {
  for (const std::string& name : kModels) {
    SECTION(name) {
      const Found found = require_model(name);
      const std::string& path = found.path;
      const ::onnx::ModelProto proto = load_proto(path);
      const auto model = ios::onnx::import_model(path, found.options);
      const Graph& g = model.graph;
      check_invariants(g);

      CHECK(model.sha256 == ios::sha256_file(path));
      CHECK(model.batch == 1);
      REQUIRE(model.inputs.size() == 1);
      CHECK(model.inputs[0].first == proto.graph().input(0).name());
      CHECK(model.inputs[0].second == declared_shape(proto.graph().input(0), 1));
      REQUIRE(g.outputs().size() == 1);
      CHECK(g.tensor(g.outputs()[0]).name == proto.graph().output(0).name());
      CHECK(g.tensor(g.outputs()[0]).shape == declared_shape(proto.graph().output(0), 1));

      // Operator counts: compute operators pass through one to one; Pad,
      // BatchNorm after a conv, Identity, Dropout and Constant disappear.
      std::map<std::string, int> onnx_hist;
      std::map<std::string, std::string> producer_op;
      for (const auto& n : proto.graph().node()) {
        ++onnx_hist[n.op_type()];
        for (const auto& o : n.output()) producer_op[o] = n.op_type();
      }
      int bn_after_conv = 0;
      for (const auto& n : proto.graph().node()) {
        if (n.op_type() == "BatchNormalization" && producer_op[n.input(0)] == "Conv") ++bn_after_conv;
      }
      const auto ir_hist = ir_histogram(g);
      for (const auto& [op, count] : ir_hist) {
        INFO(name << ": " << op);
        if (op == "BatchNormalization") {
          CHECK(count == onnx_hist[op] - bn_after_conv);
        } else {
          CHECK(op != "Pad");
          CHECK(count == onnx_hist[op]);
        }
      }
      for (const std::string op : {"Conv", "Relu", "Concat", "Gemm", "MaxPool", "AveragePool", "Add", "Clip"}) {
        INFO(name << ": " << op);
        CHECK(ir_hist.count(op) == onnx_hist.count(op));
      }

      // Every ONNX Pad -> AveragePool pair became one AveragePool counting
      // the padding, with the Pad's spatial amounts as its own pads.
      for (const auto& n : proto.graph().node()) {
        if (n.op_type() != "AveragePool" || producer_op[n.input(0)] != "Pad") continue;
        const auto id = g.find_tensor(n.output(0));
        REQUIRE(id);
        const auto& pool = g.node(g.tensor(*id).producer);
        REQUIRE(pool.op == OpKind::kAveragePool);
        CHECK(g.tensor(pool.inputs[0]).producer != ios::ir::kNone);
        CHECK(g.node(g.tensor(pool.inputs[0]).producer).op != OpKind::kPad);
        std::vector<int64_t> onnx_pads;
        for (const auto& m : proto.graph().node()) {
          if (m.output(0) != n.input(0)) continue;
          for (const auto& t : proto.graph().node()) {
            if (t.op_type() == "Constant" && t.output(0) == m.input(1)) {
              const auto& v = t.attribute(0).t();
              const std::string& raw = v.raw_data();
              onnx_pads.resize(raw.size() / 8);
              std::memcpy(onnx_pads.data(), raw.data(), raw.size());
              if (raw.empty()) onnx_pads.assign(v.int64_data().begin(), v.int64_data().end());
            }
          }
        }
        REQUIRE(onnx_pads.size() == 8);
        const auto& a = pool.attr<ios::ir::PoolAttrs>();
        const ios::ir::Dims expected{onnx_pads[2], onnx_pads[3], onnx_pads[6], onnx_pads[7]};
        CHECK(a.pads == expected);
        const bool padded = onnx_pads[2] || onnx_pads[3] || onnx_pads[6] || onnx_pads[7];
        if (padded) CHECK(a.count_include_pad);
      }
    }
  }
}

TEST_CASE("a batch override replaces the batch of an exported model", "[onnx][models][batch]") {
  const std::string path = require_model("resnet50").path;
  ios::onnx::ImportOptions options;
  options.batch = 2;
  const auto model = ios::onnx::import_model(path, options);
  CHECK(model.batch == 2);
  CHECK(model.inputs.at(0).second == ios::ir::Shape{2, 3, 224, 224});
  CHECK(model.graph.tensor(model.graph.outputs().at(0)).shape == ios::ir::Shape{2, 1000});
  for (const auto& t : model.graph.tensors()) {
    if (!t.is_constant()) CHECK(t.shape.at(0) == 2);
  }
  check_invariants(model.graph);
}

TEST_CASE("a dynamic-batch export needs --batch and then has that batch everywhere", "[onnx][models][batch]") {
  const Found found = require_model("squeezenet1_1");
  ::onnx::ModelProto proto = load_proto(found.path);
  // Make dim 0 of the input and output symbolic, as --dynamic-batch exports
  // do (a no-op on such an export).
  proto.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
  proto.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
  const auto dyn_path = ios::test::scratch_dir() / "squeezenet1_1-bdyn.onnx";
  ios::test::write_bytes(dyn_path, proto.SerializeAsString());

  try {
    ios::onnx::import_model(dyn_path.string());
    FAIL("a symbolic batch imported without --batch");
  } catch (const ios::UserError& e) {
    CHECK(std::string(e.what()).find("--batch N") != std::string::npos);
  }

  ios::onnx::ImportOptions options;
  options.batch = 4;
  const auto model = ios::onnx::import_model(dyn_path.string(), options);
  ios::onnx::ImportOptions batch1;
  batch1.batch = 1;
  const auto fixed = ios::onnx::import_model(found.path, batch1);
  CHECK(model.batch == 4);
  CHECK(model.inputs.at(0).second == ios::ir::Shape{4, 3, 224, 224});
  CHECK(model.graph.tensor(model.graph.outputs().at(0)).shape == ios::ir::Shape{4, 1000});
  REQUIRE(model.graph.num_nodes() == fixed.graph.num_nodes());
  for (size_t t = 0; t < model.graph.num_tensors(); ++t) {
    const auto& a = model.graph.tensor(static_cast<ios::ir::TensorId>(t));
    const auto& b = fixed.graph.tensor(static_cast<ios::ir::TensorId>(t));
    CHECK(a.name == b.name);
    if (a.is_constant()) {
      CHECK(a.shape == b.shape);
    } else {
      ios::ir::Shape expected = b.shape;
      expected.at(0) = 4;
      CHECK(a.shape == expected);
    }
  }
  // The hash is of the file's bytes, whatever batch it is imported at.
  CHECK(model.sha256 == ios::sha256_file(dyn_path.string()));
}
