// ios-model-weights: ONNX models without their weights, and the weights back.
//
// The GPU machine a session borrows takes at most 64 MiB and must run the
// very graphs scheduled here (same stage signatures, same file hashes in the
// prepared schedules), but RandWire alone weighs 248 MB. So the GPU kit
// (scripts/gpu/prepare.sh) carries each model as a *skeleton*: the graph with
// every large weight tensor emptied, its per-output-channel RMS kept in the
// tensor's doc_string. `fill` turns a skeleton into a complete model with
// weights drawn by this program's own generator (not numpy's, whose streams
// may differ between library versions), scaled to the original RMS of each
// output channel: the exported models fold calibrated batch normalisation
// into their convolutions, so matching those scales keeps every layer's
// activations about as large as in the export (well-conditioned, finite).
//
//   ios-model-weights strip MODEL.onnx SKELETON.onnx   # weights out, RMS kept
//   ios-model-weights fill SKELETON.onnx MODEL.onnx    # weights back, deterministic
//
// The kit's canonical model is fill(strip(export)), made here; the GPU
// machine runs fill on the same skeleton with this same program, so the two
// files are byte-identical (the kit checks the SHA-256 before any run).
//
// Which tensors: float32, float16 and bfloat16 initializers of at least
// kMinStripped elements that are the weight of a Conv, ConvTranspose, Gemm (B)
// or MatMul (either side). Everything else (biases, normalisation
// parameters, masks, shape constants) stays as exported. A 16-bit weight is
// drawn in float32 like any other and stored rounded to nearest even in its
// type, as ios rounds (ir/element_type.h), so the typed models of
// onnx_models/generated travel as skeletons too.
//
// The RMS in a mark need not be the export's own: scripts/gpu/prepare.sh
// calibrates them (scripts/gpu/onnx_torch.py calibrate), so that every
// rebuilt layer's output is as large as the export's on the same input.
//
// Exit codes as ios's programs: 0 ok, 1 internal error, 2 bad input.
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include "core/error.h"
#include "core/file_io.h"
#include "ir/element_type.h"

namespace {

constexpr int64_t kMinStripped = 1024;
constexpr const char* kMark = "ios-model-weights rms:";

// The output-channel axis of a weight, and its role, from the node that uses it.
struct WeightUse {
  int channel_axis = 0;  // the axis whose index is the output channel (per-channel RMS)
};

// The element type of a float initializer ios can strip; nullopt for the others.
std::optional<ios::ir::ElementType> float_type(const onnx::TensorProto& t) {
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: return ios::ir::ElementType::kFloat32;
    case onnx::TensorProto::FLOAT16: return ios::ir::ElementType::kFloat16;
    case onnx::TensorProto::BFLOAT16: return ios::ir::ElementType::kBFloat16;
    default: return std::nullopt;
  }
}

int64_t element_count(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  return n;
}

// Where each initializer is used as a weight; initializers with another use
// (or several different uses) are left alone.
std::map<std::string, WeightUse> weight_uses(const onnx::GraphProto& graph) {
  std::map<std::string, WeightUse> uses;
  std::map<std::string, int> other;
  std::map<std::string, int> rank;
  for (const onnx::TensorProto& t : graph.initializer()) rank[t.name()] = t.dims_size();
  for (const onnx::NodeProto& node : graph.node()) {
    for (int i = 0; i < node.input_size(); ++i) {
      const std::string& name = node.input(i);
      if (!rank.count(name)) continue;
      const std::string& op = node.op_type();
      std::optional<WeightUse> use;
      if ((op == "Conv" || op == "ConvTranspose") && i == 1) {
        use = WeightUse{op == "Conv" ? 0 : 1};
      } else if (op == "Gemm" && i == 1) {
        int trans_b = 0;
        for (const onnx::AttributeProto& a : node.attribute()) {
          if (a.name() == "transB") trans_b = static_cast<int>(a.i());
        }
        use = WeightUse{trans_b != 0 ? 0 : 1};
      } else if (op == "MatMul" && (i == 0 || i == 1) && rank[name] >= 2) {
        use = WeightUse{i == 1 ? rank[name] - 1 : rank[name] - 2};
      }
      if (use) {
        auto [it, inserted] = uses.emplace(name, *use);
        if (!inserted && it->second.channel_axis != use->channel_axis) ++other[name];
      } else {
        ++other[name];
      }
    }
  }
  for (const auto& [name, count] : other) uses.erase(name);
  return uses;
}

// A 16-bit value from its bits.
float from_bits(uint16_t bits, ios::ir::ElementType type) {
  return type == ios::ir::ElementType::kFloat16 ? ios::ir::half_bits_to_float(bits)
                                                : ios::ir::bfloat16_bits_to_float(bits);
}

std::vector<float> float_values(const onnx::TensorProto& t, const std::string& file) {
  const int64_t n = element_count(t);
  std::vector<float> v(static_cast<size_t>(n));
  const ios::ir::ElementType type = *float_type(t);
  if (type != ios::ir::ElementType::kFloat32) {
    // 16-bit data: two little-endian bytes each in raw_data, or one value per
    // int32_data entry (ONNX's layout for float16 and bfloat16).
    if (t.has_raw_data() && t.raw_data().size() == static_cast<size_t>(n) * 2) {
      const auto* bytes = reinterpret_cast<const unsigned char*>(t.raw_data().data());
      for (int64_t i = 0; i < n; ++i) {
        v[static_cast<size_t>(i)] = from_bits(static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8)), type);
      }
    } else if (!t.has_raw_data() && t.int32_data_size() == n) {
      for (int64_t i = 0; i < n; ++i) {
        v[static_cast<size_t>(i)] = from_bits(static_cast<uint16_t>(t.int32_data(static_cast<int>(i))), type);
      }
    } else {
      ios::user_error("{}: initializer '{}' holds no {} data for its {} elements", file, t.name(),
                      ios::ir::type_name(type), n);
    }
    return v;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != static_cast<size_t>(n) * sizeof(float)) {
      ios::user_error("{}: initializer '{}' holds {} bytes for {} float32 elements", file, t.name(),
                      t.raw_data().size(), n);
    }
    std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
  } else if (t.float_data_size() == n) {
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = t.float_data(static_cast<int>(i));
  } else {
    ios::user_error("{}: initializer '{}' has no data (external data is not supported here)", file, t.name());
  }
  return v;
}

// RMS of each index along `axis`, as C99 hexadecimal floats (exact in text).
std::string channel_rms(const std::vector<float>& v, const onnx::TensorProto& t, int axis) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= t.dims(d);
  for (int d = axis + 1; d < t.dims_size(); ++d) inner *= t.dims(d);
  const int64_t channels = t.dims(axis);
  std::vector<double> sum(static_cast<size_t>(channels), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* p = v.data() + (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) sum[static_cast<size_t>(c)] += double(p[i]) * p[i];
    }
  }
  std::string text = kMark;
  text += std::to_string(axis);
  char buf[64];
  for (double s : sum) {
    std::snprintf(buf, sizeof buf, " %a", static_cast<float>(std::sqrt(s / double(outer * inner))));
    text += buf;
  }
  return text;
}

// splitmix64: a tiny generator whose output depends only on its integer
// arithmetic, identical on every machine and compiler.
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// Weights uniform in [-sqrt(3) rms, sqrt(3) rms) per output channel (the
// uniform distribution with that RMS), from a stream keyed by the tensor's
// name, so that the values do not depend on the order of the initializers.
void fill_tensor(onnx::TensorProto& t, const std::string& file) {
  std::istringstream in(t.doc_string().substr(std::strlen(kMark)));
  int axis = -1;
  in >> axis;
  if (!in || axis < 0 || axis >= t.dims_size()) {
    ios::user_error("{}: initializer '{}' has a malformed weight mark", file, t.name());
  }
  const int64_t channels = t.dims(axis);
  std::vector<float> rms(static_cast<size_t>(channels));
  for (float& r : rms) {
    std::string word;
    in >> word;
    char* end = nullptr;
    r = std::strtof(word.c_str(), &end);
    if (word.empty() || *end != '\0' || !std::isfinite(r) || r < 0.0f) {
      ios::user_error("{}: initializer '{}' has a malformed weight mark", file, t.name());
    }
  }
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= t.dims(d);
  for (int d = axis + 1; d < t.dims_size(); ++d) inner *= t.dims(d);
  std::vector<float> out(static_cast<size_t>(outer * channels * inner));
  const uint64_t key = fnv1a(t.name());
  const float sqrt3 = 1.7320508f;
  uint64_t index = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float scale = sqrt3 * rms[static_cast<size_t>(c)];
      for (int64_t i = 0; i < inner; ++i, ++index) {
        // 24 random bits -> [-1, 1), exactly representable.
        const float u = static_cast<float>(splitmix64(key ^ (index * 0xD1B54A32D192ED03ull)) >> 40) *
                            (1.0f / 8388608.0f) -
                        1.0f;
        out[index] = scale * u;
      }
    }
  }
  const ios::ir::ElementType type = *float_type(t);
  std::string raw;
  if (type == ios::ir::ElementType::kFloat32) {
    raw.resize(out.size() * sizeof(float));
    std::memcpy(raw.data(), out.data(), raw.size());
  } else {
    raw.resize(out.size() * 2);
    for (size_t i = 0; i < out.size(); ++i) {
      const uint16_t bits = type == ios::ir::ElementType::kFloat16 ? ios::ir::float_to_half_bits(out[i])
                                                                  : ios::ir::float_to_bfloat16_bits(out[i]);
      raw[2 * i] = static_cast<char>(bits & 0xFF);
      raw[2 * i + 1] = static_cast<char>(bits >> 8);
    }
  }
  t.clear_doc_string();
  t.clear_float_data();
  t.clear_int32_data();
  t.set_raw_data(std::move(raw));
}

onnx::ModelProto read_model(const std::string& path) {
  // Bounded as every input ios reads (core/file_io.h); protobuf parses at most 2 GiB.
  const std::string bytes = ios::read_file_limited(path, INT_MAX, "ONNX model");
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    ios::user_error("{}: not an ONNX model (protobuf parse failed)", path);
  }
  return model;
}

void write_model(const onnx::ModelProto& model, const std::string& path) {
  std::string bytes;
  // Deterministic serialisation: the same message gives the same bytes.
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!model.SerializeToCodedStream(&coded)) ios::internal_error("{}: serialising the model failed", path);
  }
  ios::write_file_atomically(path, bytes);
}

int strip(const std::string& from, const std::string& to) {
  onnx::ModelProto model = read_model(from);
  const std::map<std::string, WeightUse> uses = weight_uses(model.graph());
  int stripped = 0;
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    auto it = uses.find(t.name());
    if (it == uses.end() || !float_type(t) || element_count(t) < kMinStripped ||
        t.data_location() == onnx::TensorProto::EXTERNAL) {
      continue;
    }
    const std::vector<float> values = float_values(t, from);
    t.set_doc_string(channel_rms(values, t, it->second.channel_axis));
    t.clear_raw_data();
    t.clear_float_data();
    t.clear_int32_data();
    ++stripped;
  }
  write_model(model, to);
  std::cerr << "ios-model-weights: " << to << ": " << stripped << " weight tensors stripped\n";
  return 0;
}

int fill(const std::string& from, const std::string& to) {
  onnx::ModelProto model = read_model(from);
  int filled = 0;
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.doc_string().rfind(kMark, 0) != 0) continue;
    if (!float_type(t) || t.has_raw_data() || t.float_data_size() != 0 || t.int32_data_size() != 0) {
      ios::user_error("{}: initializer '{}' carries a weight mark but is not an empty float tensor", from,
                      t.name());
    }
    fill_tensor(t, from);
    ++filled;
  }
  write_model(model, to);
  std::cerr << "ios-model-weights: " << to << ": " << filled << " weight tensors filled\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage = "usage: ios-model-weights strip|fill IN.onnx OUT.onnx";
  try {
    if (argc != 4) ios::user_error("{}", usage);
    const std::string verb = argv[1];
    if (ios::same_file(argv[2], argv[3])) ios::user_error("{}: the output must not be the input", argv[3]);
    if (verb == "strip") return strip(argv[2], argv[3]);
    if (verb == "fill") return fill(argv[2], argv[3]);
    ios::user_error("unknown verb '{}'; {}", verb, usage);
  } catch (const ios::Error& e) {
    std::cerr << "ios-model-weights: " << e.what() << "\n";
    return static_cast<int>(e.exit_code());
  } catch (const std::exception& e) {
    std::cerr << "ios-model-weights: internal error: " << e.what() << "\n";
    return 1;
  }
}
