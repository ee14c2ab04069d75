#include "cuda/cudnn_graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "cuda/check.h"
#include "cuda/cuda_types.h"
#include "cuda/program.h"

namespace ios::cuda {

void BackendDescriptor::reset() noexcept {
  if (desc_ != nullptr) IOS_CUDNN_CALL_NOTHROW(cudnnBackendDestroyDescriptor(desc_));
  desc_ = nullptr;
}

BackendDescriptor::BackendDescriptor(cudnnBackendDescriptorType_t type) {
  IOS_CUDNN_CALL(cudnnBackendCreateDescriptor(type, &desc_));
}

BackendDescriptor& BackendDescriptor::set(cudnnBackendAttributeName_t name,
                                          cudnnBackendAttributeType_t type, int64_t count,
                                          const void* values, const char* what) {
  const cudnnStatus_t status = cudnnBackendSetAttribute(desc_, name, type, count, values);
  if (status != CUDNN_STATUS_SUCCESS) {
    internal_error("cuDNN refused attribute {} ({}): {}", what, static_cast<int>(name),
                   cudnnGetErrorString(status));
  }
  return *this;
}

BackendDescriptor& BackendDescriptor::set_int(cudnnBackendAttributeName_t name, int64_t value,
                                              const char* what) {
  return set(name, CUDNN_TYPE_INT64, 1, &value, what);
}

BackendDescriptor& BackendDescriptor::set_ints(cudnnBackendAttributeName_t name,
                                               const std::vector<int64_t>& values,
                                               const char* what) {
  return set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), values.data(), what);
}

BackendDescriptor& BackendDescriptor::set_desc(cudnnBackendAttributeName_t name,
                                               const BackendDescriptor& value, const char* what) {
  return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, value.ptr(), what);
}

void BackendDescriptor::finalize(const char* what) {
  const cudnnStatus_t status = cudnnBackendFinalize(desc_);
  if (status != CUDNN_STATUS_SUCCESS) {
    internal_error("cuDNN refused to finalize {}: {}", what, cudnnGetErrorString(status));
  }
}

cudnnStatus_t BackendDescriptor::try_finalize() { return cudnnBackendFinalize(desc_); }

const char* layout_name(TensorLayout layout) {
  return layout == TensorLayout::kNhwc ? "nhwc" : "nchw";
}

const char* heuristic_mode_name(HeuristicMode mode) {
  switch (mode) {
    case HeuristicMode::kA:
      return "A";
    case HeuristicMode::kB:
      return "B";
    case HeuristicMode::kFallback:
      return "fallback";
  }
  return "?";
}

std::string ConvGraphSpec::key() const {
  // The math mode matters only for float32 tensors; 16-bit ones name their type in shape.key().
  return fmt::format("{}|{}|{}|e{}{}{}", shape.key(), layout_name(layout),
                     shape.type == ir::ElementType::kFloat32 ? ir::math_mode_name(math) : "-",
                     epilogue.bias ? "b" : "", epilogue.residual ? "z" : "",
                     epilogue.relu ? "r" : "");
}

ConvGraphSpec conv_graph_spec(const ConvShape& shape, ir::MathMode math, TensorLayout layout) {
  ConvGraphSpec spec;
  spec.shape = shape;
  spec.layout = layout;
  spec.math = math;
  // The lowering's fused convolution is bias + (residual) + ReLU, always with
  // a bias (a zero one where the node has none); an unfused one is the bare
  // convolution, its bias and chain an element-wise operation after it.
  spec.epilogue.bias = shape.fused;
  spec.epilogue.residual = shape.fused && shape.has_z;
  spec.epilogue.relu = shape.fused;
  return spec;
}

namespace {

int64_t product(const ir::Dims& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

// Strides of a tensor [n, c, spatial...] in `layout`, with batch stride
// `batch_stride` (0: dense).
std::vector<int64_t> strides_of(int64_t c, const ir::Dims& spatial, int64_t batch_stride,
                                TensorLayout layout) {
  const size_t rank = spatial.size() + 2;
  std::vector<int64_t> s(rank, 1);
  const int64_t dense = c * product(spatial);
  if (layout == TensorLayout::kNchw) {
    int64_t acc = 1;
    for (size_t i = rank; i-- > 2;) {
      s[i] = acc;
      acc *= spatial[i - 2];
    }
    s[1] = acc;
  } else {
    int64_t acc = c;
    s[1] = 1;
    for (size_t i = rank; i-- > 2;) {
      s[i] = acc;
      acc *= spatial[i - 2];
    }
  }
  s[0] = batch_stride > 0 ? batch_stride : dense;
  return s;
}

std::vector<int64_t> dims_of(int64_t n, int64_t c, const ir::Dims& spatial) {
  std::vector<int64_t> d{n, c};
  d.insert(d.end(), spatial.begin(), spatial.end());
  return d;
}

BackendDescriptor make_tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                              const std::vector<int64_t>& strides, int64_t alignment,
                              bool is_virtual) {
  BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "tensor data type");
  t.set_ints(CUDNN_ATTR_TENSOR_DIMENSIONS, dims, "tensor dimensions");
  t.set_ints(CUDNN_ATTR_TENSOR_STRIDES, strides, "tensor strides");
  t.set_int(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid, "tensor id");
  t.set_int(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, alignment, "tensor alignment");
  const bool v = is_virtual;
  t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v, "tensor virtual");
  return t;
}

// A pointwise operation out = mode(in [, b]) computing in float.
void add_pointwise(ConvOperationGraph& g, std::vector<cudnnBackendDescriptor_t>& ops,
                   cudnnPointwiseMode_t mode, const BackendDescriptor& in,
                   const BackendDescriptor* b, const BackendDescriptor& out) {
  BackendDescriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
  const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  pw.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise precision");
  pw.finalize("pointwise descriptor");
  BackendDescriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw, "pointwise operation mode");
  op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, in, "pointwise input");
  if (b != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b, "pointwise second input");
  op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, out, "pointwise output");
  op.finalize("pointwise operation");
  ops.push_back(op.get());
  g.parts.push_back(std::move(pw));
  g.parts.push_back(std::move(op));
}

template <typename T>
std::vector<T> get_array(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name,
                         cudnnBackendAttributeType_t type, int64_t capacity) {
  std::vector<T> values(static_cast<size_t>(capacity));
  int64_t count = 0;
  if (cudnnBackendGetAttribute(desc, name, type, capacity, &count, values.data()) !=
      CUDNN_STATUS_SUCCESS)
    return {};
  values.resize(static_cast<size_t>(std::clamp<int64_t>(count, 0, capacity)));
  return values;
}

// Reads a configuration's engine, knobs and notes.
void describe_config(EngineConfig& c) {
  BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t count = 0;
  cudnnBackendDescriptor_t e = engine.get();
  if (cudnnBackendGetAttribute(c.config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                               &e) != CUDNN_STATUS_SUCCESS) {
    return;
  }
  IOS_CUDNN_CALL_NOTHROW(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                                  CUDNN_TYPE_INT64, 1, &count, &c.engine));
  for (cudnnBackendNumericalNote_t n : get_array<cudnnBackendNumericalNote_t>(
           e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
           CUDNN_NUMERICAL_NOTE_TYPE_COUNT)) {
    c.numerical_notes.push_back(n);
  }
  for (cudnnBackendBehaviorNote_t n : get_array<cudnnBackendBehaviorNote_t>(
           e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
           CUDNN_BEHAVIOR_NOTE_TYPE_COUNT)) {
    c.behavior_notes.push_back(n);
  }
  // Knob choices: descriptors the caller creates, cuDNN fills.
  constexpr int64_t kMaxKnobs = CUDNN_KNOB_TYPE_COUNTS;
  std::vector<BackendDescriptor> choices;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < kMaxKnobs; ++i) {
    choices.emplace_back(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    raw.push_back(choices.back().get());
  }
  int64_t knobs = 0;
  if (cudnnBackendGetAttribute(c.config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxKnobs, &knobs,
                               raw.data()) == CUDNN_STATUS_SUCCESS) {
    for (int64_t i = 0; i < std::min(knobs, kMaxKnobs); ++i) {
      cudnnBackendKnobType_t type{};
      int64_t value = 0, n = 0;
      if (cudnnBackendGetAttribute(raw[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                   CUDNN_TYPE_KNOB_TYPE, 1, &n, &type) == CUDNN_STATUS_SUCCESS &&
          cudnnBackendGetAttribute(raw[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                   CUDNN_TYPE_INT64, 1, &n, &value) == CUDNN_STATUS_SUCCESS) {
        c.knobs.emplace_back(static_cast<int64_t>(type), value);
      }
    }
  }
  std::sort(c.knobs.begin(), c.knobs.end());
}

cudnnBackendHeurMode_t cudnn_mode(HeuristicMode mode) {
  switch (mode) {
    case HeuristicMode::kA:
      return CUDNN_HEUR_MODE_A;
    case HeuristicMode::kB:
      return CUDNN_HEUR_MODE_B;
    case HeuristicMode::kFallback:
      return CUDNN_HEUR_MODE_FALLBACK;
  }
  return CUDNN_HEUR_MODE_A;
}

}  // namespace

ConvOperationGraph build_conv_graph(const ConvGraphSpec& spec, cudnnHandle_t handle,
                                    const std::string& label) {
  const ConvShape& s = spec.shape;
  const size_t spatial = s.spatial();
  IOS_ASSERT(spatial >= 2 && spatial <= 3 && s.filter.size() == spatial &&
                 s.out.size() == spatial && s.pad.size() == spatial && s.stride.size() == spatial &&
                 s.dilation.size() == spatial,
             "convolution '{}': {} spatial axes", label, spatial);
  if (spec.layout == TensorLayout::kNhwc &&
      ((s.x_batch_stride != 0 && s.x_batch_stride != s.x_item()) ||
       (s.y_batch_stride != 0 && s.y_batch_stride != s.y_item()))) {
    // Channel slices of a concatenation are strided batches in NCHW only.
    user_error(
        "convolution '{}': a strided batch (a concatenation's channel slice) in channels-last "
        "layout",
        label);
  }
  const cudnnDataType_t type = cudnn_type(s.type);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  ConvOperationGraph g;
  g.parts.reserve(32);  // `current` below points into it: no reallocation
  const ir::Dims w_spatial = s.filter;
  const int64_t w_channels = s.c / s.group;
  const std::vector<int64_t> x_dims = dims_of(s.n, s.c, s.in), y_dims = dims_of(s.n, s.k, s.out),
                             w_dims = dims_of(s.k, w_channels, w_spatial);
  const std::vector<int64_t> y_strides = strides_of(s.k, s.out, s.y_batch_stride, spec.layout);
  BackendDescriptor x = make_tensor(
      kUidX, type, x_dims, strides_of(s.c, s.in, s.x_batch_stride, spec.layout), s.x_align, false);
  BackendDescriptor w =
      make_tensor(kUidW, type, w_dims, strides_of(w_channels, w_spatial, 0, spec.layout),
                  kBufferAlignment, false);
  BackendDescriptor y = make_tensor(kUidY, type, y_dims, y_strides, s.y_align, false);
  x.finalize("tensor x");
  w.finalize("tensor w");
  y.finalize("tensor y");

  BackendDescriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute,
           "convolution compute type");
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode,
           "convolution mode");
  conv.set_int(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, static_cast<int64_t>(spatial),
               "convolution spatial axes");
  conv.set_ints(CUDNN_ATTR_CONVOLUTION_DILATIONS, s.dilation, "convolution dilations");
  conv.set_ints(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, s.stride, "convolution strides");
  conv.set_ints(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, s.pad, "convolution pads");
  conv.set_ints(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, s.pad, "convolution pads");
  conv.finalize("convolution descriptor");

  std::vector<cudnnBackendDescriptor_t> ops;
  // The convolution writes y directly, or a float virtual tensor the epilogue reads.
  int64_t next_virtual = 100;
  BackendDescriptor conv_out =
      spec.epilogue.any() ? make_tensor(next_virtual++, compute, y_dims, y_strides, s.y_align, true)
                          : BackendDescriptor{};
  if (conv_out) conv_out.finalize("convolution output");
  const BackendDescriptor& conv_y = conv_out ? conv_out : y;
  {
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x, "convolution x");
    op.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w, "convolution w");
    op.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, conv_y, "convolution y");
    op.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv, "convolution descriptor");
    const float alpha = 1.0f, beta = 0.0f;
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha,
           "convolution alpha");
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta,
           "convolution beta");
    op.finalize("convolution operation");
    ops.push_back(op.get());
    g.parts.push_back(std::move(op));
  }
  // The epilogue, in the order the legacy fused call computes it:
  // relu(conv + bias + z). Each step writes a float virtual tensor, the last y.
  std::vector<std::pair<cudnnPointwiseMode_t, int64_t>> steps;  // (mode, operand uid or 0)
  if (spec.epilogue.bias) steps.emplace_back(CUDNN_POINTWISE_ADD, kUidBias);
  if (spec.epilogue.residual) steps.emplace_back(CUDNN_POINTWISE_ADD, kUidZ);
  if (spec.epilogue.relu) steps.emplace_back(CUDNN_POINTWISE_RELU_FWD, 0);
  const BackendDescriptor* current = &conv_y;
  for (size_t i = 0; i < steps.size(); ++i) {
    const bool last = i + 1 == steps.size();
    BackendDescriptor operand;
    if (steps[i].second == kUidBias) {
      std::vector<int64_t> dims(spatial + 2, 1), strides(spatial + 2, s.k);
      dims[1] = s.k;
      strides[1] = 1;
      operand = make_tensor(kUidBias, type, dims, strides, kBufferAlignment, false);
    } else if (steps[i].second == kUidZ) {
      operand =
          make_tensor(kUidZ, type, y_dims, strides_of(s.k, s.out, s.z_batch_stride, spec.layout),
                      s.z_align, false);
    }
    if (operand) operand.finalize("epilogue operand");
    BackendDescriptor out;
    if (!last) {
      out = make_tensor(next_virtual++, compute, y_dims, y_strides, s.y_align, true);
      out.finalize("epilogue intermediate");
    }
    add_pointwise(g, ops, steps[i].first, *current, operand ? &operand : nullptr, last ? y : out);
    if (operand) g.parts.push_back(std::move(operand));
    if (!last) {
      g.parts.push_back(std::move(out));
      current = &g.parts.back();
    }
  }
  g.graph = BackendDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  g.graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              static_cast<int64_t>(ops.size()), ops.data(), "operation graph operations");
  if (handle != nullptr)
    g.graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle");
  if (const cudnnStatus_t status = g.graph.try_finalize(); status != CUDNN_STATUS_SUCCESS) {
    user_error("convolution '{}' ({}): cuDNN's graph API refuses its operation graph: {}", label,
               spec.key(), cudnnGetErrorString(status));
  }
  g.operations = static_cast<int64_t>(ops.size());
  for (BackendDescriptor* d : {&x, &w, &y, &conv, &conv_out}) {
    if (*d) g.parts.push_back(std::move(*d));
  }
  return g;
}

std::optional<DeviceTarget> DeviceTarget::preset(const std::string& name) {
  // Published figures of the SXM parts (the GPUs device_profiles/ describes
  // and the GPU kit has run on): 132 SMs at up to 1,980 MHz, 50 MiB of L2,
  // 227 KiB of shared memory per block.
  DeviceTarget t;
  t.sm_version = 900;
  t.sm_count = 132;
  t.l2_cache_bytes = int64_t{50} << 20;
  t.max_shared_memory_per_block_optin = 232448;
  t.sm_clock_khz = 1980000;
  if (name == "h100") {
    t.name = "NVIDIA H100 80GB HBM3";
    t.global_memory_bytes = int64_t{80} << 30;
    t.memory_clock_khz = 2619000;
    return t;
  }
  if (name == "h200") {
    t.name = "NVIDIA H200";
    t.global_memory_bytes = int64_t{141} << 30;
    t.memory_clock_khz = 3201000;
    return t;
  }
  return std::nullopt;
}

std::string DeviceTarget::json() const {
  // The fields cuDNN's device property descriptor reads from its JSON form
  // (cuDNN 9.19 refuses one without any of them); the limits every GPU since
  // Volta shares are fixed here.
  nlohmann::json j;
  j["deviceVer"] = sm_version;
  j["driverVer"] = driver_version;
  j["cudaDeviceId"] = 0;
  j["deviceName"] = name;
  j["multiProcessorCount"] = sm_count;
  j["totalGlobalMem"] = global_memory_bytes;
  j["l2CacheSize"] = l2_cache_bytes;
  j["smClockRateKHz"] = sm_clock_khz;
  j["memClockRateKHz"] = memory_clock_khz;
  j["maxSharedMemoryPerBlockOptin"] = max_shared_memory_per_block_optin;
  j["maxSharedMemoryPerBlock"] = 49152;
  j["reservedSharedMemoryPerBlock"] = 1024;
  j["maxGridSize"] = {2147483647, 65535, 65535};
  j["maxBlockSize"] = {1024, 1024, 64};
  j["regsPerBlock"] = 65536;
  j["maxRegistersPerSM"] = 65536;
  j["warpSize"] = 32;
  j["maxCtasPerSM"] = 32;
  j["maxThreadsPerBlock"] = 1024;
  j["maxThreadsPerSM"] = 2048;
  j["pciDeviceId"] = 0;
  j["isTccDriver"] = 0;
  j["supportCoopLaunch"] = 1;
  return j.dump();
}

BackendDescriptor make_device_properties(const DeviceTarget& target) {
  BackendDescriptor d(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
  const std::string text = target.json();
  d.set(CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
        static_cast<int64_t>(text.size()), text.data(), "device properties");
  d.finalize("device properties");
  return d;
}

bool EngineConfig::has_numerical_note(cudnnBackendNumericalNote_t note) const {
  return std::find(numerical_notes.begin(), numerical_notes.end(), static_cast<int64_t>(note)) !=
         numerical_notes.end();
}

bool EngineConfig::runtime_compiled() const {
  return std::find(behavior_notes.begin(), behavior_notes.end(),
                   static_cast<int64_t>(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) !=
         behavior_notes.end();
}

std::string EngineConfig::name() const {
  std::string text = fmt::format("eng{}", engine);
  for (size_t i = 0; i < knobs.size(); ++i) {
    text += fmt::format("{}k{}={}", i == 0 ? " " : ",", knobs[i].first, knobs[i].second);
  }
  return text;
}

bool config_allowed(const EngineConfig& config, ir::ElementType type, ir::MathMode math) {
  // A pass through fp16 over float32 (or any narrower) data is not what any
  // precision asks for.
  if (config.has_numerical_note(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) return false;
  // Strict FP32: no TF32 tensor cores on float32 tensors (16-bit ones run on
  // their own type's tensor cores whatever the math mode).
  if (type == ir::ElementType::kFloat32 && math == ir::MathMode::kFp32 &&
      config.has_numerical_note(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) {
    return false;
  }
  return true;
}

std::vector<EngineConfig> engine_configs(const ConvOperationGraph& graph, const ConvGraphSpec& spec,
                                         HeuristicMode mode, const BackendDescriptor* device) {
  std::vector<EngineConfig> out;
  BackendDescriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph.graph, "heuristics graph");
  const cudnnBackendHeurMode_t m = cudnn_mode(mode);
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &m, "heuristics mode");
  if (device != nullptr)
    heur.set_desc(CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, *device, "heuristics device");
  if (heur.try_finalize() != CUDNN_STATUS_SUCCESS) return out;
  int64_t count = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0) {
    return out;
  }
  std::vector<EngineConfig> configs(static_cast<size_t>(count));
  std::vector<cudnnBackendDescriptor_t> raw;
  for (EngineConfig& c : configs) {
    c.config = BackendDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(c.config.get());
  }
  // cuDNN returns only the configurations that pass its support check for
  // the graph's device (none without a device or a device description).
  int64_t returned = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                               raw.data()) != CUDNN_STATUS_SUCCESS) {
    return out;
  }
  configs.resize(static_cast<size_t>(std::clamp<int64_t>(returned, 0, count)));
  for (EngineConfig& c : configs) {
    c.source = mode;
    describe_config(c);
    if (config_allowed(c, spec.shape.type, spec.math)) out.push_back(std::move(c));
  }
  return out;
}

std::vector<EngineConfig> candidate_configs(const ConvOperationGraph& graph,
                                            const ConvGraphSpec& spec,
                                            const BackendDescriptor* device) {
  std::vector<EngineConfig> all;
  std::set<std::string> seen;
  for (HeuristicMode mode : {HeuristicMode::kA, HeuristicMode::kB, HeuristicMode::kFallback}) {
    for (EngineConfig& c : engine_configs(graph, spec, mode, device)) {
      if (seen.insert(c.name()).second) all.push_back(std::move(c));
    }
  }
  return all;
}

std::optional<ExecutionPlan> build_plan(const EngineConfig& config, cudnnHandle_t handle,
                                        const BackendDescriptor* device) {
  ExecutionPlan p;
  p.plan = BackendDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  p.plan.set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config.config, "plan configuration");
  if (handle != nullptr) {
    p.plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "plan handle");
  } else {
    IOS_ASSERT(device != nullptr, "an execution plan needs a handle or a device description");
    p.plan.set_desc(CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, *device, "plan device");
  }
  if (p.plan.try_finalize() != CUDNN_STATUS_SUCCESS) return std::nullopt;
  int64_t n = 0;
  if (cudnnBackendGetAttribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                               CUDNN_TYPE_INT64, 1, &n, &p.workspace) != CUDNN_STATUS_SUCCESS) {
    return std::nullopt;
  }
  p.config = config.name();
  return p;
}

}  // namespace ios::cuda
