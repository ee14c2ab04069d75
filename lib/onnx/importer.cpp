#include "onnx/importer.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <fcntl.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <climits>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <new>
#include <queue>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "core/file_io.h"
#include "core/json_limits.h"
#include "core/log.h"
#include "core/sha256.h"
#include "ir/element_types.h"
#include "ir/passes.h"
#include "ir/precision.h"
#include "ir/shape_inference.h"
#include "onnx/attributes.h"
#include "onnx/const_tensor.h"
#include "onnx/constant_folding.h"
#include "onnx/einsum.h"
#include "onnx/element_types.h"
#include "onnx/external_data.h"
#include "onnx/graph_builder.h"
#include "onnx/import_schemas.h"
#include "onnx/model_file.h"
#include "onnx/opset_adapter.h"

namespace ios::onnx {
namespace {

using ::onnx::GraphProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;

// Shape inference and folding alternate until nothing folds. A round folds
// every chain whose input shapes are known; a Shape of an activation waits
// for the round after its Reshape target folded. Swin-T's twelve blocks need
// 29 rounds; the cap keeps a hostile chain from making import quadratic.
constexpr int kMaxFoldRounds = 64;

// Import is linear in nodes but ONNX's shape inference costs about 1.5 KiB
// of memory per node: half a million nodes import in about 9 s of CPU and
// under 1 GiB (docs/testing.md has the measurements).
constexpr int kMaxNodes = 500000;

// ONNX's messages span lines ("==> Context: ..."); ios errors are one line.
std::string one_line(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  constexpr size_t kMax = 600;
  if (out.size() > kMax) out = out.substr(0, kMax) + "...";
  return out;
}

// Runs an ONNX library call, turning its exceptions into a UserError.
void onnx_call(const std::string& file, const char* stage, const std::function<void()>& call) {
  try {
    call();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    user_error("{}: {}: not enough memory; lower the memory the model needs (--batch) or raise the "
               "memory limit (ulimit -v)", file, stage);
  } catch (const std::exception& e) {
    user_error("{}: {}: {}", file, stage, one_line(e.what()));
  }
}

// Refuses what is not a model file before it is read; true for a regular
// file, false for a pipe (`<(cat model.onnx)`, read like a file, once).
bool check_model_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) user_error("{}: no such file; check the path", path);
  if (fs::is_directory(status)) user_error("{}: is a directory; give the path of a .onnx file", path);
  // A device (/dev/zero) would be read to the limit for nothing.
  if (!fs::is_regular_file(status) && !fs::is_fifo(status)) {
    user_error("{}: is not a regular file; give the path of a .onnx file", path);
  }
  return fs::is_regular_file(status);
}

std::string read_file(const std::string& path) {
  return read_file_limited(path, static_cast<uint64_t>(INT_MAX), "ONNX model (protobuf limit)");
}

[[noreturn]] void too_large_for_protobuf(const std::string& path) {
  user_error("{}: the file is over 2 GiB, the protobuf limit; save the weights as external data "
             "is not supported either, use a smaller model", path);
}

[[noreturn]] void not_a_model(const std::string& path) {
  user_error("{}: not a valid ONNX model (protobuf parse failed); the file is truncated or not an "
             "ONNX file, re-export it", path);
}

// What every parsed file must have before anything else reads it.
void check_parsed(const ModelProto& model, const std::string& path) {
  // Arbitrary bytes sometimes parse as a protobuf with unknown fields only.
  if (!model.has_graph() || model.ir_version() <= 0 || model.opset_import_size() == 0) {
    user_error("{}: not a valid ONNX model (no graph, IR version or opset); the file is truncated "
               "or not an ONNX file, re-export it", path);
  }
  if (model.graph().node_size() == 0) user_error("{}: the ONNX graph has no nodes", path);
  if (model.graph().node_size() > kMaxNodes) {
    user_error("{}: the ONNX graph has {} nodes, more than {}, the most ios imports (CNNs have "
               "thousands); it is not a model ios can schedule", path, model.graph().node_size(), kMaxNodes);
  }
}

// A regular file parsed straight from the disk: its bytes and the parsed
// model (which holds the weights again) are never in memory together.
ModelProto parse_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) user_error("{}: cannot open the ONNX model ({})", path, std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    ::close(fd);
    user_error("{}: cannot read the ONNX model ({})", path, std::strerror(errno));
  }
  if (info.st_size == 0) {
    ::close(fd);
    user_error("{}: the file is empty; it is not an ONNX model", path);
  }
  if (static_cast<uint64_t>(info.st_size) > static_cast<uint64_t>(INT_MAX)) {
    ::close(fd);
    too_large_for_protobuf(path);
  }
  ModelProto model;
  bool parsed = false;
  {
    google::protobuf::io::FileInputStream stream(fd);
    stream.SetCloseOnDelete(true);
    parsed = model.ParseFromZeroCopyStream(&stream);
    if (stream.GetErrno() != 0) {
      user_error("{}: read error in the ONNX model ({})", path, std::strerror(stream.GetErrno()));
    }
  }
  if (!parsed) not_a_model(path);
  check_parsed(model, path);
  return model;
}

ModelProto parse(const std::string& bytes, const std::string& path) {
  if (bytes.empty()) user_error("{}: the file is empty; it is not an ONNX model", path);
  if (bytes.size() > static_cast<size_t>(INT_MAX)) too_large_for_protobuf(path);
  ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) not_a_model(path);
  check_parsed(model, path);
  return model;
}

// Shapes come from the file: every tensor's element count is checked for
// overflow and capped (2^34 elements, 64 GiB of float32) before anything is
// allocated from it, so a hostile shape fails here with a message.
void check_tensor_sizes(const ir::Graph& graph, const std::string& path) {
  constexpr int64_t kMaxElements = int64_t{1} << 34;
  for (const ir::Tensor& t : graph.tensors()) {
    int64_t n = 1;
    for (int64_t d : t.shape) {
      if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxElements) {
        user_error("{}: tensor '{}' has shape {}, more than 2^34 elements; ios cannot run it", path,
                   t.name, ir::to_string(t.shape));
      }
    }
  }
}

// Everything ONNX's checker and shape inference will read from the file's
// tensors is checked first: libonnx trusts declared sizes and crashes on
// some inconsistent ones. External data is loaded (from the model's folder
// only) so that the checker never looks at the file system.
void check_tensors(ModelProto& model, const std::string& path) {
  GraphProto& graph = *model.mutable_graph();
  if (graph.sparse_initializer_size() > 0) {
    user_error("{}: the model has sparse initializers ('{}'), which ios does not read; re-export it "
               "with dense weights", path, graph.sparse_initializer(0).values().name());
  }
  for (const NodeProto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g() || attr.graphs_size() > 0 || attr.has_sparse_tensor() || attr.sparse_tensors_size() > 0) {
        user_error("{}: node {}: attribute '{}' holds a subgraph or sparse tensor, which ios does not "
                   "support", path, node_label(node), attr.name());
      }
    }
  }
  load_external_data(model, path);
  for_each_tensor(graph, [&](::onnx::TensorProto& t, const std::string& where) {
    check_tensor_proto(t, path, where);
  });
}

// The size operands of `node` (Resize scales and sizes, Split sizes, Pad
// amounts, Tile repeats, Expand shapes) whose constant value is negative or
// not finite. ONNX's shape inference takes such a value as it is and infers a
// garbage output shape (a NaN scale gives a dimension of -2^63); this names
// the node, the operand and the value instead. Returns "" when every operand
// is fine or not constant.
using ConstantMap = std::unordered_map<std::string, const ::onnx::TensorProto*>;

std::string bad_size_operand(const NodeProto& node, int64_t opset, const ShapeMap& shapes,
                             const ConstantMap& constants, const std::string& path) {
  // The values of input `index`, or of attribute `attr` where the opset keeps them there.
  const auto values = [&](int index, const char* attr) -> std::optional<std::vector<double>> {
    if (index < 0) {
      if (const auto v = attr_floats(node, attr); v && !v->empty()) {
        return std::vector<double>(v->begin(), v->end());
      }
      if (const auto v = attr_ints(node, attr)) return std::vector<double>(v->begin(), v->end());
      return std::nullopt;
    }
    const auto it = constants.find(input_or_empty(node, index));
    if (it == constants.end()) return std::nullopt;
    const ConstTensor t = decode_tensor(*it->second, path);
    std::vector<double> out(t.size());
    for (size_t k = 0; k < t.size(); ++k) out[k] = t.as_double(k);
    return out;
  };
  const auto operand = [&](int index, const char* attr) {
    return index < 0 ? fmt::format("attribute '{}'", attr)
                     : fmt::format("input {} ({})", index, quote_excerpt(node.input(index)));
  };
  const auto check = [&](int index, const char* attr, std::string_view what, bool positive) {
    const auto v = values(index, attr);
    if (!v) return std::string();
    for (size_t k = 0; k < v->size(); ++k) {
      const double x = (*v)[k];
      if (!std::isfinite(x) || x < 0 || (positive && x == 0)) {
        return fmt::format("{}: node {}: {} holds {} at position {}; {} must be {}", path,
                           node_label(node), operand(index, attr), x, k, what,
                           positive ? "positive finite numbers" : "finite numbers >= 0");
      }
    }
    return std::string();
  };
  const std::string& op = node.op_type();
  if (op == "Resize" || op == "Upsample") {
    const bool upsample = op == "Upsample";
    const int scales = upsample ? (opset >= 9 ? 1 : -1) : (opset < 11 ? 1 : 2);
    if (auto m = check(scales, "scales", "scales", true); !m.empty()) return m;
    if (!upsample && opset >= 11) return check(3, "sizes", "sizes", false);
  } else if (op == "Split") {
    return check(opset < 13 ? -1 : 1, "split", "split sizes", false);
  } else if (op == "Tile") {
    return check(1, "repeats", "repeats", false);
  } else if (op == "Expand") {
    return check(1, "shape", "shape entries", false);
  } else if (op == "Pad") {
    const int index = opset < 11 ? -1 : 1;
    const auto pads = values(index, "pads");
    const auto in = shapes.find(input_or_empty(node, 0));
    if (!pads || in == shapes.end() || pads->size() != 2 * in->second.size()) return "";
    const size_t rank = in->second.size();
    for (size_t a = 0; a < rank; ++a) {
      const double begin = (*pads)[a], end = (*pads)[a + rank];
      if (!std::isfinite(begin) || !std::isfinite(end) ||
          static_cast<double>(in->second[a]) + begin + end < 0) {
        return fmt::format("{}: node {}: {} pads axis {} (size {}) by {} and {}, which leaves "
                           "{} elements; negative pads may remove at most the whole axis",
                           path, node_label(node), operand(index, "pads"), a, in->second[a], begin,
                           end, static_cast<double>(in->second[a]) + begin + end);
      }
    }
  }
  return "";
}

// A tensor whose inferred shape is negative or over the element cap: the
// message names the node that makes it and, where one is to blame, its
// operand and value.
[[noreturn]] void bad_inferred_shape(const ModelProto& model, const ShapeMap& shapes,
                                     const std::string& tensor, const ir::Shape& shape,
                                     const std::string& path) {
  const bool negative = std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; });
  ConstantMap constants;
  for (const auto& init : model.graph().initializer()) constants.emplace(init.name(), &init);
  for (const NodeProto& node : model.graph().node()) {
    if (std::find(node.output().begin(), node.output().end(), tensor) == node.output().end()) {
      continue;
    }
    const std::string why = bad_size_operand(node, default_opset(model), shapes, constants, path);
    if (!why.empty()) throw UserError(why);
    user_error("{}: node {}: its output {} has shape {}, {}; ios cannot run it", path,
               node_label(node), quote_excerpt(tensor), ir::to_string(shape),
               negative ? "a negative dimension" : "more than 2^34 elements");
  }
  user_error("{}: tensor {} has shape {}, {}; ios cannot run it", path, quote_excerpt(tensor),
             ir::to_string(shape), negative ? "a negative dimension" : "more than 2^34 elements");
}

// IR shape functions name the node but not the file.
void infer_ir_shapes(ir::Graph& graph, const std::string& path) {
  try {
    ir::infer_shapes(graph);
  } catch (const UserError& e) {
    user_error("{}: {}", path, e.what());
  }
}

// Graph inputs' static shapes come from the file or the options: capped like
// every other tensor before ONNX's shape inference multiplies them out.
void check_input_sizes(const std::vector<std::pair<std::string, ir::Shape>>& inputs,
                       const std::string& path) {
  for (const auto& [name, shape] : inputs) {
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d <= 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxTensorElements) {
        user_error("{}: graph input '{}' has shape {}, more than 2^34 elements; ios cannot run it",
                   path, name, ir::to_string(shape));
      }
    }
  }
}

void check_operators(const ModelProto& model, const std::string& path) {
  for (const NodeProto& node : model.graph().node()) {
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!default_domain || !(is_supported_op(node.op_type()) || is_foldable_op(node.op_type()))) {
      user_error("{}: node {}: operator {}{} is not supported; supported operators: {}", path,
                 node_label(node), default_domain ? "" : node.domain() + ".", node.op_type(),
                 supported_ops_list());
    }
    // Window attributes are checked before ONNX's shape inference, which
    // divides by strides and would crash on a zero.
    for (const auto& attr : node.attribute()) {
      const std::string& name = attr.name();
      const bool positive = name == "strides" || name == "kernel_shape" || name == "dilations";
      if (!positive && name != "pads") continue;
      for (int64_t v : attr.ints()) {
        if ((positive && (v < 1 || v > (int64_t{1} << 20))) || (!positive && (v < 0 || v > (int64_t{1} << 20)))) {
          user_error("{}: node {}: attribute '{}' has the value {}; {} must be {}", path,
                     node_label(node), name, v, name, positive ? "from 1 to 2^20" : "from 0 to 2^20");
        }
      }
    }
  }
}

// Sorts the nodes topologically (stable) so that the checker, which wants
// sorted nodes, sees them so; a cycle is reported by a node on it.
void sort_nodes(GraphProto& graph, const std::string& path) {
  const int n = graph.node_size();
  std::unordered_map<std::string, int> producer;
  for (int k = 0; k < n; ++k) {
    for (const std::string& out : graph.node(k).output()) {
      if (out.empty()) continue;
      auto [it, fresh] = producer.emplace(out, k);
      if (!fresh) {
        user_error("{}: tensor '{}' is produced by two nodes, {} and {}; an ONNX graph must assign "
                   "each tensor once", path, out, node_label(graph.node(it->second)), node_label(graph.node(k)));
      }
    }
  }
  std::vector<int> pending(static_cast<size_t>(n), 0);
  std::vector<std::vector<int>> readers(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    for (const std::string& in : graph.node(k).input()) {
      auto it = producer.find(in);
      if (it == producer.end()) continue;
      ++pending[static_cast<size_t>(k)];
      readers[static_cast<size_t>(it->second)].push_back(k);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int k = 0; k < n; ++k) {
    if (pending[static_cast<size_t>(k)] == 0) ready.push(k);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int k = ready.top();
    ready.pop();
    order.push_back(k);
    for (int r : readers[static_cast<size_t>(k)]) {
      if (--pending[static_cast<size_t>(r)] == 0) ready.push(r);
    }
  }
  if (static_cast<int>(order.size()) != n) {
    // Walk back through unfinished producers until a node repeats: it lies on a cycle.
    int at = 0;
    while (pending[static_cast<size_t>(at)] == 0) ++at;
    std::vector<bool> seen(static_cast<size_t>(n), false);
    while (!seen[static_cast<size_t>(at)]) {
      seen[static_cast<size_t>(at)] = true;
      for (const std::string& in : graph.node(at).input()) {
        auto it = producer.find(in);
        if (it != producer.end() && pending[static_cast<size_t>(it->second)] > 0) {
          at = it->second;
          break;
        }
      }
    }
    user_error("{}: the graph has a cycle through node {}; an ONNX graph must be acyclic, re-export "
               "the model", path, node_label(graph.node(at)));
  }
  bool sorted = true;
  for (int k = 0; k < n; ++k) sorted = sorted && order[static_cast<size_t>(k)] == k;
  if (sorted) return;
  google::protobuf::RepeatedPtrField<NodeProto> nodes;
  for (int k : order) *nodes.Add() = graph.node(k);
  graph.mutable_node()->Swap(&nodes);
}

std::string format_dims(const ::onnx::TensorShapeProto& shape) {
  std::string out;
  for (int d = 0; d < shape.dim_size(); ++d) {
    if (d) out += 'x';
    const auto& dim = shape.dim(d);
    out += dim.has_dim_value() ? std::to_string(dim.dim_value())
                               : (dim.has_dim_param() ? dim.dim_param() : std::string("?"));
  }
  return out;
}

struct InputShapes {
  std::vector<std::pair<std::string, ir::Shape>> inputs;  // ONNX order
  int64_t batch = 1;
};

// The static shape of one graph input from its declared shape, the batch
// options and, when given, a schedule's recorded shape (ImportOptions).
ir::Shape static_input_shape(const ::onnx::ValueInfoProto& input, const ImportOptions& options,
                             const ir::Shape* recorded, const std::string& path) {
  const auto& tensor_type = input.type().tensor_type();
  if (recorded && !tensor_type.has_shape())
    return *recorded;  // shaped by --input-shape at optimization
  if (!tensor_type.has_shape()) {
    user_error("{}: graph input '{}' has no shape; pass --input-shape {}:NxCxHxW", path,
               input.name(), input.name());
  }
  const auto& shape = tensor_type.shape();
  if (recorded && recorded->size() != static_cast<size_t>(shape.dim_size())) {
    user_error(
        "{}: the schedule records input '{}' with shape {}, but {} declares rank {} ({}); the "
        "schedule was made for another model: re-run ios-optimize on this one",
        options.recorded_source, input.name(), ir::to_string(*recorded), path, shape.dim_size(),
        format_dims(shape));
  }
  ir::Shape dims;
  for (int d = 0; d < shape.dim_size(); ++d) {
    const auto& dim = shape.dim(d);
    const bool is_static = dim.has_dim_value();
    const bool rewritten = d == 0 && options.batch && (options.rewrite_batch || !is_static);
    if (recorded) {
      const int64_t want = (*recorded)[static_cast<size_t>(d)];
      if (is_static && dim.dim_value() != want && !(d == 0 && options.rewrite_batch)) {
        user_error(
            "{}: the schedule records input '{}' with shape {}, but {} declares {} (dimension "
            "{} is static); {}",
            options.recorded_source, input.name(), ir::to_string(*recorded), path,
            format_dims(shape), d,
            d == 0 ? std::string(
                         "if the schedule was made with --rewrite-batch, pass --rewrite-batch; "
                         "otherwise re-run ios-optimize on this model")
                   : std::string("the schedule was made for other shapes: re-run ios-optimize"));
      }
      dims.push_back(want);
    } else if (rewritten) {
      dims.push_back(*options.batch);
    } else if (is_static && dim.dim_value() > 0) {
      dims.push_back(dim.dim_value());
    } else if (is_static) {
      user_error(
          "{}: graph input '{}' has a static dimension {} of size {} (shape {}); ios runs "
          "tensors with at least one element only",
          path, input.name(), d, dim.dim_value(), format_dims(shape));
    } else if (d == 0) {
      user_error(
          "{}: graph input '{}' has a symbolic batch dimension '{}' (shape {}); pass "
          "--batch N to fix it",
          path, input.name(), dim.has_dim_param() ? dim.dim_param() : "?", format_dims(shape));
    } else {
      user_error(
          "{}: graph input '{}' has a symbolic dimension {} (shape {}); pass "
          "--input-shape {}:DIMS with every dimension",
          path, input.name(), d, format_dims(shape), input.name());
    }
  }
  return dims;
}

// Gives every graph input a static shape; returns them in ONNX order with
// the model's batch.
InputShapes set_input_shapes(ModelProto& model, const ImportOptions& options,
                             const std::string& path) {
  GraphProto& graph = *model.mutable_graph();
  std::set<std::string> weights;
  for (const auto& t : graph.initializer()) weights.insert(t.name());
  std::vector<std::string> names;
  for (const auto& input : graph.input()) {
    if (!weights.count(input.name())) names.push_back(input.name());
  }
  for (const auto& [name, shape] : options.input_shapes) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      user_error("{}: --input-shape names '{}', which is not a graph input; the inputs are: {}", path,
                 name, fmt::join(names, ", "));
    }
    if (shape.empty() || std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d <= 0; })) {
      user_error("{}: --input-shape for '{}' must list positive dimensions, got '{}'", path, name,
                 ir::to_string(shape));
    }
  }
  std::map<std::string, ir::Shape> recorded;
  for (const auto& [name, shape] : options.recorded_inputs) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      user_error(
          "{}: the schedule records input '{}', which {} does not have (its inputs: {}); the "
          "schedule was made for another model",
          options.recorded_source, name, path, fmt::join(names, ", "));
    }
    if (!recorded.emplace(name, shape).second) {
      user_error("{}: the schedule records input {} twice in model.inputs; the file is damaged: "
                 "regenerate it with ios-optimize",
                 options.recorded_source, quote_excerpt(name));
    }
  }
  if (!options.recorded_inputs.empty()) {
    for (const std::string& name : names) {
      if (!recorded.count(name) && !options.input_shapes.count(name)) {
        user_error(
            "{}: the schedule records no shape for input '{}' of {}; the schedule was made for "
            "another model",
            options.recorded_source, name, path);
      }
    }
  }
  if (options.batch && *options.batch <= 0) {
    user_error("{}: --batch must be a positive integer, got {}", path, *options.batch);
  }
  if (options.rewrite_batch && !options.batch) {
    user_error("{}: --rewrite-batch needs --batch N, the batch to write into every input", path);
  }

  bool changed = false;
  bool symbolic_batch = false;  // some input's dim 0 takes the batch option
  InputShapes result;
  for (auto& input : *graph.mutable_input()) {
    if (weights.count(input.name())) continue;
    if (!input.type().has_tensor_type()) {
      user_error("{}: graph input '{}' is not a tensor; ios takes tensor inputs only", path, input.name());
    }
    auto& tensor_type = *input.mutable_type()->mutable_tensor_type();
    if (tensor_type.elem_type() != ::onnx::TensorProto::FLOAT) {
      user_error(
          "{}: graph input '{}' has element type {}; ios runs {} models "
          "only",
          path, input.name(), type_name(tensor_type.elem_type()), ir::element_type_names_text());
    }
    ir::Shape dims;
    if (auto it = options.input_shapes.find(input.name()); it != options.input_shapes.end()) {
      dims = it->second;
      if (tensor_type.has_shape() && tensor_type.shape().dim_size() != static_cast<int>(dims.size())) {
        user_error("{}: --input-shape gives '{}' rank {}, the model has rank {} ({})", path,
                   input.name(), dims.size(), tensor_type.shape().dim_size(), format_dims(tensor_type.shape()));
      }
    } else {
      auto it_recorded = recorded.find(input.name());
      dims = static_input_shape(
          input, options, it_recorded == recorded.end() ? nullptr : &it_recorded->second, path);
      symbolic_batch |= tensor_type.has_shape() && tensor_type.shape().dim_size() > 0 &&
                        !tensor_type.shape().dim(0).has_dim_value();
    }
    // Rewrite the declared shape where it differs.
    bool same = tensor_type.has_shape() && tensor_type.shape().dim_size() == static_cast<int>(dims.size());
    for (size_t d = 0; same && d < dims.size(); ++d) {
      const auto& dim = tensor_type.shape().dim(static_cast<int>(d));
      same = dim.has_dim_value() && dim.dim_value() == dims[d];
    }
    if (!same) {
      changed = true;
      auto* shape = tensor_type.mutable_shape();
      shape->clear_dim();
      for (int64_t v : dims) shape->add_dim()->set_dim_value(v);
    }
    result.inputs.emplace_back(input.name(), dims);
  }
  const int64_t first_dim0 =
      !result.inputs.empty() && !result.inputs[0].second.empty() ? result.inputs[0].second[0] : 1;
  if (options.batch && !options.rewrite_batch && !symbolic_batch && first_dim0 != *options.batch &&
      !result.inputs.empty() && !options.input_shapes.count(result.inputs[0].first)) {
    user_error(
        "{}: the model's batch is static (input '{}' has shape {}) and --batch {} differs; drop "
        "--batch, or pass --rewrite-batch to set dimension 0 of every input to {}",
        path, result.inputs[0].first, ir::to_string(result.inputs[0].second), *options.batch,
        *options.batch);
  }
  result.batch = options.batch.value_or(first_dim0);
  if (changed) {
    // Shapes recorded for the old input shapes (intermediate and output
    // batch sizes) would contradict inference: let it recompute them.
    graph.clear_value_info();
    for (auto& output : *graph.mutable_output()) {
      if (output.type().has_tensor_type()) output.mutable_type()->mutable_tensor_type()->clear_shape();
    }
  }
  return result;
}

// Data propagation stays off: libonnx 1.12's propagation crashes on some
// hostile constants (a Slice with a negative step over an empty tensor), and
// ios's own constant folding, alternating with inference in import_model,
// resolves the same shape chains on values it has checked.
void infer_onnx_shapes(ModelProto& model, const std::string& path) {
  onnx_call(path, "ONNX shape inference failed", [&] {
    const ::onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1,
                                                /*enable_data_propagation=*/false);
    const ImportSchemas schemas;
    ::onnx::shape_inference::InferShapes(model, &schemas, options);
  });
}

// Folding's later rounds: ONNX's inference over the nodes whose outputs have
// no static shape yet (the frontier), not the whole graph again, so that a
// chain of shape arithmetic that needs many rounds costs each round its own
// few nodes. The frontier runs as a model of its own: the tensors it reads
// enter as inputs of their known types, small constants (the shapes and
// axes inference reads) as initializers; the graph outputs it makes are
// declared as in the file, so that ONNX checks them as it does in the whole
// graph. What it infers replaces the model's value_info of those tensors and
// enters `shapes`. The rest of a round's work on the whole graph is lookups
// in small sets, without allocation. Returns the frontier's size.
//
// With `folding_only`, the frontier is cut to what folding reads: the nodes
// whose shapes a Shape or Size node needs (their unresolved ancestors).
// Everything else waits for one last call after the rounds: a graph of
// 200,000 nodes behind a chain of 64 rounds would otherwise be inferred 64
// times.
int infer_frontier_shapes(ModelProto& model, ShapeMap& shapes, const std::string& path,
                          bool folding_only) {
  GraphProto& graph = *model.mutable_graph();
  std::vector<int> frontier;
  for (int k = 0; k < graph.node_size(); ++k) {
    const NodeProto& node = graph.node(k);
    if (std::none_of(node.output().begin(), node.output().end(),
                     [&](const std::string& o) { return !o.empty() && !shapes.count(o); })) {
      continue;
    }
    frontier.push_back(k);
  }
  if (folding_only && !frontier.empty()) {
    // Backwards through the frontier (ONNX lists nodes in topological
    // order) from what Shape and Size nodes read: a node is kept when a
    // kept node or a Shape reads one of its outputs. The set holds the few
    // names wanted, not the frontier's (a map of 200,000 names a round cost
    // more than the rounds' inference).
    std::unordered_set<std::string_view> wanted;
    for (const NodeProto& node : graph.node()) {
      if (node.op_type() == "Shape" || node.op_type() == "Size") wanted.insert(node.input().begin(), node.input().end());
    }
    std::vector<int> kept;
    for (auto it = frontier.rbegin(); it != frontier.rend() && !wanted.empty(); ++it) {
      const NodeProto& node = graph.node(*it);
      if (std::none_of(node.output().begin(), node.output().end(),
                       [&](const std::string& o) { return wanted.count(o) > 0; })) {
        continue;
      }
      kept.push_back(*it);
      wanted.insert(node.input().begin(), node.input().end());
    }
    frontier.assign(kept.rbegin(), kept.rend());
  }
  if (frontier.empty()) return 0;
  std::unordered_set<std::string> produced;
  for (int k : frontier) produced.insert(graph.node(k).output().begin(), graph.node(k).output().end());
  std::unordered_map<std::string, const google::protobuf::Message*> read;  // what the frontier reads, and its source
  for (int k : frontier) {
    for (const std::string& name : graph.node(k).input()) {
      if (!name.empty() && !produced.count(name)) read.emplace(name, nullptr);
    }
  }
  auto note = [&](const std::string& name, const google::protobuf::Message* source) {
    if (auto it = read.find(name); it != read.end() && it->second == nullptr) it->second = source;
  };
  for (const auto& t : graph.initializer()) note(t.name(), &t);
  for (const auto& v : graph.input()) note(v.name(), &v);
  for (const auto& v : graph.value_info()) note(v.name(), &v);
  for (const auto& v : graph.output()) note(v.name(), &v);

  ModelProto part;
  part.set_ir_version(model.ir_version());
  *part.mutable_opset_import() = model.opset_import();
  GraphProto& sub = *part.mutable_graph();
  sub.set_name(graph.name());
  std::unordered_set<std::string> declared;
  for (int k : frontier) {
    for (const std::string& name : graph.node(k).input()) {
      auto it = read.find(name);
      if (it == read.end() || it->second == nullptr || !declared.insert(name).second) continue;
      if (const auto* t = dynamic_cast<const ::onnx::TensorProto*>(it->second)) {
        ::onnx::ValueInfoProto& input = *sub.add_input();
        input.set_name(name);
        auto& type = *input.mutable_type()->mutable_tensor_type();
        type.set_elem_type(t->data_type());
        auto* shape = type.mutable_shape();  // a scalar has a shape of no dimensions, not none
        for (int64_t d : t->dims()) shape->add_dim()->set_dim_value(d);
        // Inference reads the values of shapes, axes and scales: small
        // constants travel whole, large weights by their type alone.
        const bool integer = t->data_type() == ::onnx::TensorProto::INT64 || t->data_type() == ::onnx::TensorProto::INT32;
        if (static_cast<uint64_t>(proto_num_elements(*t)) <= (integer ? uint64_t{1} << 16 : uint64_t{1} << 10)) {
          *sub.add_initializer() = *t;
        }
      } else {
        *sub.add_input() = static_cast<const ::onnx::ValueInfoProto&>(*it->second);
      }
    }
    *sub.add_node() = graph.node(k);
  }
  std::vector<int> outputs;  // graph outputs the frontier makes, by index
  for (int o = 0; o < graph.output_size(); ++o) {
    if (produced.count(graph.output(o).name())) {
      outputs.push_back(o);
      *sub.add_output() = graph.output(o);
    }
  }
  infer_onnx_shapes(part, path);
  std::unordered_set<std::string> inferred;
  for (const auto& v : sub.value_info()) inferred.insert(v.name());
  auto* infos = graph.mutable_value_info();
  // Compacted by swapping pointers (std::remove_if would move every later
  // message: a round's few removals from the front of a large graph's
  // value_info cost as much as the graph).
  int kept_infos = 0;
  for (int i = 0; i < infos->size(); ++i) {
    const ::onnx::ValueInfoProto& v = infos->Get(i);
    if (inferred.count(v.name()) > 0) continue;
    if (kept_infos != i) infos->SwapElements(kept_infos, i);
    ++kept_infos;
  }
  infos->DeleteSubrange(kept_infos, infos->size() - kept_infos);
  for (auto& [name, dims] : static_shapes(sub)) {
    if (produced.count(name)) shapes[name] = std::move(dims);
  }
  for (auto& v : *sub.mutable_value_info()) *infos->Add() = std::move(v);
  for (size_t i = 0; i < outputs.size(); ++i) {
    *graph.mutable_output(outputs[i]) = std::move(*sub.mutable_output(static_cast<int>(i)));
  }
  return static_cast<int>(frontier.size());
}

// ios's shape inference must agree with ONNX's on every activation.
void cross_check(const ir::Graph& graph, const ShapeMap& onnx_shapes, const std::string& path,
                 const char* stage) {
  for (const ir::Tensor& t : graph.tensors()) {
    if (t.is_constant()) continue;
    auto it = onnx_shapes.find(t.name);
    IOS_ASSERT(it != onnx_shapes.end(), "{}: {}: tensor '{}' has no ONNX shape", path, stage, t.name);
    IOS_ASSERT(it->second == t.shape, "{}: {}: ios infers shape {} for tensor '{}', ONNX infers {}",
               path, stage, ir::to_string(t.shape), t.name, ir::to_string(it->second));
  }
}

}  // namespace

namespace {

ImportedModel import_parsed(ModelProto& model, const std::string& sha256, const std::string& path,
                            const ImportOptions& options);

}  // namespace

::onnx::ModelProto read_model_proto(const std::string& path) {
  ModelProto model = parse_file(path);
  load_external_data(model, path);
  return model;
}

ImportedModel import_model(const std::string& path, const ImportOptions& options) {
  if (!check_model_path(path)) return import_model_from_bytes(read_file(path), path, options);
  ModelProto model = parse_file(path);
  return import_parsed(model, sha256_file(path), path, options);
}

ImportedModel import_model_from_bytes(const std::string& bytes, const std::string& path,
                                      const ImportOptions& options) {
  ModelProto model = parse(bytes, path);
  return import_parsed(model, sha256_hex(bytes), path, options);
}

namespace {

// Everything after parsing. The weights move from `model` into the IR as
// the graph is built (build_ir), so `model` is left without them.
ImportedModel import_parsed(ModelProto& model, const std::string& sha256, const std::string& path,
                            const ImportOptions& options) {
  auto log = logger("onnx");
  check_operators(model, path);
  check_tensors(model, path);
  const DeclaredTypes declared = store_16bit_as_float(model, path);
  sort_nodes(*model.mutable_graph(), path);
  const AdaptedVersions versions = adapt_to_checker_versions(model, path);
  if (versions.nodes_rewritten > 0) {
    log->debug("{}: IR version {}, opset {}: {} nodes rewritten to their opset-{} form", path,
               versions.ir_version, versions.opset, versions.nodes_rewritten, kCheckerMaxOpset);
  }
  if (versions.converted) {
    log->debug("{}: opset {} converted to opset {} by ONNX's version converter", path, versions.opset,
               kConvertedOpset);
  }
  onnx_call(path, "the ONNX checker rejected the model", [&] { ::onnx::checker::check_model(model); });

  ImportedModel result;
  result.path = path;
  result.sha256 = sha256;
  InputShapes inputs = set_input_shapes(model, options, path);
  result.inputs = std::move(inputs.inputs);
  result.batch = inputs.batch;
  check_input_sizes(result.inputs, path);

  const int nodes_before = model.graph().node_size();
  int folded = 0, fold_rounds = 0;
  int64_t frontier_nodes = 0;  // inferred again after the first, whole-graph round
  ShapeMap shapes;
  for (int round = 0;; ++round) {
    fold_rounds = round + 1;
    if (round == 0) {
      infer_onnx_shapes(model, path);
      shapes = static_shapes(model.graph());
      // value_info without a static shape (the types of what waits for
      // folding) is no frontier's source and would be scanned every round.
      auto* infos = model.mutable_graph()->mutable_value_info();
      int kept_infos = 0;
      for (int i = 0; i < infos->size(); ++i) {
        if (!shapes.count(infos->Get(i).name())) continue;
        if (kept_infos != i) infos->SwapElements(kept_infos, i);
        ++kept_infos;
      }
      infos->DeleteSubrange(kept_infos, infos->size() - kept_infos);
    } else {
      frontier_nodes += infer_frontier_shapes(model, shapes, path, /*folding_only=*/true);
    }
    const int constants = model.graph().initializer_size();
    const int n = fold_constants(model, shapes, path);
    // Folded values that unfolded nodes read became initializers, appended.
    for (int k = constants; k < model.graph().initializer_size(); ++k) {
      const auto& t = model.graph().initializer(k);
      shapes[t.name()] = ir::Shape(t.dims().begin(), t.dims().end());
    }
    folded += n;
    if (n == 0) break;
    if (round >= kMaxFoldRounds) {
      user_error("{}: constant folding did not settle after {} rounds; the model's shape arithmetic "
                 "is not supported", path, kMaxFoldRounds);
    }
  }

  // The later rounds inferred only what folding reads: the rest once now.
  if (fold_rounds > 1) frontier_nodes += infer_frontier_shapes(model, shapes, path, /*folding_only=*/false);
  // The rounds kept `shapes` up to date as they went; once more from the
  // final graph, so that it names only what is left.
  if (fold_rounds > 1) shapes = static_shapes(model.graph());
  // Shapes ONNX inferred from the file (an Expand to a huge shape, say) are
  // capped before the IR builder multiplies them out.
  for (const auto& [name, shape] : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d < 0 || (d > 0 && (__builtin_mul_overflow(n, d, &n) || n > kMaxTensorElements))) {
        bad_inferred_shape(model, shapes, name, shape, path);
      }
    }
  }
  result.graph = build_ir(model, shapes, declared, path);
  check_tensor_sizes(result.graph, path);
  infer_ir_shapes(result.graph, path);
  cross_check(result.graph, shapes, path, "import");
  const ir::PassStats stats = ir::run_import_passes(result.graph);
  infer_ir_shapes(result.graph, path);
  cross_check(result.graph, shapes, path, "IR passes");
  ir::assign_element_types(result.graph, declared, path);
  check_declared_types(result.graph, declared, path);

  const auto layer_norms = std::count_if(result.graph.nodes().begin(), result.graph.nodes().end(),
                                         [](const ir::Node& n) { return n.op == ir::OpKind::kLayerNorm; });
  log->debug("{}: ONNX shape inference: the whole graph once, then {} nodes in {} later rounds", path,
             frontier_nodes, fold_rounds - 1);
  log->debug("{}: {} ONNX nodes, {} folded at import in {} rounds; IR: {} nodes, {} tensors; {} BatchNorm and {} "
             "Pad folded, {} Concat flattened, {} layer normalizations fused, {} GELU chains fused, {} Mish "
             "chains fused, {} dead nodes removed; {} LayerNormalization nodes",
             path, nodes_before, folded, fold_rounds, result.graph.num_nodes(), result.graph.num_tensors(),
             stats.batchnorm_folded, stats.pads_folded, stats.concats_flattened, stats.layer_norms_fused,
             stats.gelus_fused, stats.mishes_fused, stats.dead_removed, layer_norms);
  return result;
}

}  // namespace

}  // namespace ios::onnx
