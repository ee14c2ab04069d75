// Convolutions through cuDNN's graph (backend) API: an owner for backend
// descriptors, the operation graph of one convolution with the epilogue the
// lowering fuses into it (bias, residual add, ReLU), its engine
// configurations from heuristics modes A and B and the fallback list, and
// execution plans built from them.
//
// Nothing here needs a device except plans built for a handle and their
// execution: cuDNN builds operation graphs without one, and answers
// heuristics (and finalizes plans) for a device described by a device
// property descriptor (DeviceTarget below) instead of a handle. Without
// either, heuristics count their candidates but every one fails cuDNN's
// support check (no SM version to check against), so the host tests describe
// the GPU they ask for.
//
// NVIDIA's C++ wrapper of this API (cudnn-frontend) is not available to the
// project; this is the small part of it that ios needs.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/conv.h"
#include "ir/precision.h"

namespace ios::cuda {

// One cudnnBackendDescriptor_t: created by type, destroyed once, movable.
class BackendDescriptor {
 public:
  BackendDescriptor() = default;
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type);  // throws on failure
  ~BackendDescriptor() { reset(); }
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;
  BackendDescriptor(BackendDescriptor&& other) noexcept
      : desc_(std::exchange(other.desc_, nullptr)) {}
  BackendDescriptor& operator=(BackendDescriptor&& other) noexcept {
    if (this != &other) {
      reset();
      desc_ = std::exchange(other.desc_, nullptr);
    }
    return *this;
  }
  cudnnBackendDescriptor_t get() const { return desc_; }
  // The address of the handle, for attributes that take descriptor arrays.
  const cudnnBackendDescriptor_t* ptr() const { return &desc_; }
  explicit operator bool() const { return desc_ != nullptr; }
  void reset() noexcept;

  // Attribute setters; each throws (naming the attribute) when cuDNN refuses.
  BackendDescriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                         int64_t count, const void* values, const char* what);
  BackendDescriptor& set_int(cudnnBackendAttributeName_t name, int64_t value, const char* what);
  BackendDescriptor& set_ints(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values,
                              const char* what);
  BackendDescriptor& set_desc(cudnnBackendAttributeName_t name, const BackendDescriptor& value,
                              const char* what);
  // Finalizes; throws InternalError naming `what` when cuDNN refuses.
  void finalize(const char* what);
  // Finalizes; the status instead of a throw (a candidate cuDNN may refuse).
  cudnnStatus_t try_finalize();

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};

// Where a convolution's tensors keep their channels: NCHW (ios's storage
// today, with channel slices of concatenations as strided batches) or
// channels-last NHWC (NDHWC in 3-D), the 16-bit tensor cores' own layout.
enum class TensorLayout : uint8_t { kNchw, kNhwc };
const char* layout_name(TensorLayout layout);

// What runs after the convolution inside the same operation graph, as the
// lowering fuses it today (ConvOp::fused): y = relu(conv(x, w) + bias [+ z]).
struct ConvEpilogue {
  bool bias = false;
  bool residual = false;  // + z, of y's shape and type
  bool relu = false;
  bool any() const { return bias || residual || relu; }
};

// One convolution as the graph API is given it: the geometry of ConvShape
// (strided batches and pointer alignments included), the layout, the math of
// float32 tensors, and the epilogue.
struct ConvGraphSpec {
  ConvShape shape;
  TensorLayout layout = TensorLayout::kNchw;
  ir::MathMode math = ir::MathMode::kTf32;  // float32 only; 16-bit tensors use their tensor cores
  ConvEpilogue epilogue;
  // Everything the plan depends on, in one line (the plan cache's key part).
  std::string key() const;
};

// The spec of a convolution the lowering emitted (ConvShape from
// conv_shape()), in ios's NCHW storage, with its fused epilogue.
ConvGraphSpec conv_graph_spec(const ConvShape& shape, ir::MathMode math,
                              TensorLayout layout = TensorLayout::kNchw);

// The tensors' unique ids in the operation graph (the variant pack's keys).
enum ConvTensorUid : int64_t { kUidX = 1, kUidW = 2, kUidY = 3, kUidBias = 4, kUidZ = 5 };

// The operation graph of one spec, with the descriptors it refers to kept
// alive beside it. Throws UserError naming `label` when cuDNN refuses the
// graph (a geometry the graph API does not express).
struct ConvOperationGraph {
  std::vector<BackendDescriptor>
      parts;  // tensors, the convolution, pointwise descriptors, operations
  BackendDescriptor graph;
  int64_t operations = 0;
};
// `handle`: the cuDNN handle whose device the heuristics and plans are for;
// null on a machine without a device (heuristics then need a DeviceTarget).
ConvOperationGraph build_conv_graph(const ConvGraphSpec& spec, cudnnHandle_t handle,
                                    const std::string& label);

// A GPU described without the GPU: the fields of cuDNN's device property
// descriptor (its JSON form), so that heuristics can be asked and plans
// finalized on a machine without one.
struct DeviceTarget {
  std::string name;
  int sm_version = 900;  // compute capability x 100
  int sm_count = 0;
  int driver_version = 13000;  // CUDA driver API version
  int64_t l2_cache_bytes = 0;
  int64_t global_memory_bytes = 0;
  int max_shared_memory_per_block_optin = 0;
  int sm_clock_khz = 0;
  int memory_clock_khz = 0;
  // The preset for `name` ("h100", "h200": the GPUs of device_profiles/),
  // nullopt for another name.
  static std::optional<DeviceTarget> preset(const std::string& name);
  std::string json() const;
};
// A finalized device property descriptor of `target`.
BackendDescriptor make_device_properties(const DeviceTarget& target);

// cuDNN's heuristic modes ios asks, in the order their answers are tried.
enum class HeuristicMode : uint8_t { kA, kB, kFallback };
const char* heuristic_mode_name(HeuristicMode mode);

// One engine configuration a heuristic returned.
struct EngineConfig {
  BackendDescriptor config;
  int64_t engine = -1;                             // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  std::vector<std::pair<int64_t, int64_t>> knobs;  // (knob type, value), by knob type
  std::vector<int64_t> numerical_notes;            // cudnnBackendNumericalNote_t
  std::vector<int64_t> behavior_notes;             // cudnnBackendBehaviorNote_t
  HeuristicMode source = HeuristicMode::kA;
  bool has_numerical_note(cudnnBackendNumericalNote_t note) const;
  bool runtime_compiled() const;
  // "eng45 k3=1,k7=0": the engine and its knob choices (logs and the plan cache).
  std::string name() const;
};

// The configurations heuristic `mode` returns for `graph` (built with a
// handle, or asked for `device` when the graph has none), in its order,
// those the math mode forbids left out: strict FP32 drops tensor-core
// engines of float32 convolutions, and every mode drops engines that
// down-convert their inputs (an fp16 pass over float32 data). Empty when
// cuDNN supports none (no throw: the caller falls back).
std::vector<EngineConfig> engine_configs(const ConvOperationGraph& graph, const ConvGraphSpec& spec,
                                         HeuristicMode mode,
                                         const BackendDescriptor* device = nullptr);
// Modes A and B, then the fallback list, each configuration once (the first
// mode that returned it named as its source).
std::vector<EngineConfig> candidate_configs(const ConvOperationGraph& graph,
                                            const ConvGraphSpec& spec,
                                            const BackendDescriptor* device = nullptr);

// Whether math mode `math` allows `config` on tensors of `type` (the filter above).
bool config_allowed(const EngineConfig& config, ir::ElementType type, ir::MathMode math);

// An execution plan of one configuration, for `handle` or (on the host) for
// `device`; nullopt when cuDNN refuses to build it.
struct ExecutionPlan {
  BackendDescriptor plan;
  int64_t workspace = 0;  // bytes
  std::string config;     // EngineConfig::name()
};
std::optional<ExecutionPlan> build_plan(const EngineConfig& config, cudnnHandle_t handle,
                                        const BackendDescriptor* device = nullptr);

// --- Choosing a plan on the device (conv_plans.cpp) -------------------------

// Samples each candidate plan is timed with; its time is their median.
constexpr int kPlanSamples = 5;
// At most this many plans that build are timed per convolution (mode A's
// first, then B's, then the fallback list's).
constexpr int kMaxPlansTimed = 12;

// The median of `samples` (the mean of the middle two for an even count);
// 0 for none.
float median_ms(std::vector<float> samples);
// The candidate with the smallest median among those with at least
// kPlanSamples samples (the first of equals); nullopt when none has.
std::optional<size_t> fastest_plan(const std::vector<std::vector<float>>& samples);

// The plan a convolution runs, with the graph and configuration it was
// built from kept alive beside it, and what choosing it found.
struct ConvPlanChoice {
  ConvGraphSpec spec;
  ConvOperationGraph graph;
  EngineConfig config;
  ExecutionPlan plan;
  float time_ms = 0.0f;  // median of kPlanSamples, L2 flushed before each
  // Every candidate's name and median time (ms; < 0: its plan did not
  // build or did not run), in the order they were tried.
  std::vector<std::pair<std::string, float>> candidates;
  bool from_cache = false;  // the plan cache named the configuration: built, not timed
  // The plan is the bare convolution's (no engine fuses spec's epilogue in
  // its layout): the epilogue of `spec.shape` runs as the own element-wise
  // kernel after it (conv_epilogue()).
  bool own_epilogue = false;
};

// The graph-API plan for `shape` on ctx's device, math and workspace limit,
// chosen by timing (or recalled from the context's choices, or named by its
// plan cache and only built); null when no plan builds and runs, and the
// caller falls back to the legacy call. A timed choice is stored in the plan
// cache. Plans are built for ctx's stream-0 handle and run with any of its
// handles.
std::shared_ptr<const ConvPlanChoice> choose_conv_plan(Context& ctx, const ConvShape& shape,
                                                       const std::string& label);

// A variant pack: the tensors' device pointers by ConvTensorUid, and the workspace.
BackendDescriptor make_variant_pack(const ConvGraphSpec& spec, const void* x, const void* w,
                                    void* y, const void* bias, const void* z, void* workspace);

}  // namespace ios::cuda
