// ios::Engine and ios::ExecutionContext (include/ios/engine.h): a model and
// a schedule loaded as ios-run loads them (engine/loading.h), run by the
// registered backends (cpu, sim) or by the CUDA engine directly (cuda: its
// contexts share the weights and enqueue on the caller's stream).
#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>

#include "backends/registry.h"
#include "core/error.h"
#include "cuda/engine.h"
#include "engine/loading.h"
#include "engine/schedule_impl.h"
#include "exec/allocations.h"
#include "exec/backend.h"
#include "exec/plan.h"
#include "ios/engine.h"
#include "ir/element_type.h"
#include "ir/graph.h"
#include "ir/precision.h"
#include "model/prepared_model.h"
#include "sched/schedule.h"

namespace ios {

namespace {

ir::ElementType element_type(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return ir::ElementType::kFloat32;
    case DataType::kFloat16:
      return ir::ElementType::kFloat16;
    case DataType::kBFloat16:
      return ir::ElementType::kBFloat16;
  }
  return ir::ElementType::kFloat32;  // not reached: every type is a case
}

DataType data_type(ir::ElementType type) {
  switch (type) {
    case ir::ElementType::kFloat32:
      return DataType::kFloat32;
    case ir::ElementType::kFloat16:
      return DataType::kFloat16;
    case ir::ElementType::kBFloat16:
      return DataType::kBFloat16;
  }
  return DataType::kFloat32;  // not reached: every type is a case
}

}  // namespace

std::string to_string(DataType type) { return ir::type_name(element_type(type)); }

size_t element_size(DataType type) { return static_cast<size_t>(ir::bytes_of(element_type(type))); }

std::string to_string(DeviceKind device) { return device == DeviceKind::kCuda ? "cuda" : "cpu"; }

int64_t TensorDesc::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// One schedule of the engine, at its batch size: the model imported at its
// shapes (its weights those of the engine's first schedule, shared), the
// schedule lowered, the backend that opens its sessions.
struct Variant {
  std::unique_ptr<model::PreparedModel> prepared;
  sched::Schedule schedule;
  exec::ExecPlan plan;
  std::string launch;  // effective: the options', else the schedule's, else graph
  std::vector<TensorDesc> inputs, outputs;
  int64_t batch = 0;  // the first input's first dimension: what run() and enqueue() choose by
  // cpu, sim: the backend, which opens a session per context.
  std::unique_ptr<exec::Backend> backend;
  // cuda: what each context's engine of this batch size is made with (the
  // engine's device weights among them), and the activation memory it needs.
  cuda::EngineOptions cuda_options;
  size_t arena_bytes = 0;
};

struct Engine::Impl {
  EngineOptions options;
  std::vector<Variant> variants;  // one per schedule, in the order given
  const exec::BackendEntry* entry = nullptr;
  // Every allocation of weights and activations of the engine and its
  // contexts while it lives (Engine::allocations()); declared before what
  // reports to it, so it outlives them.
  exec::AllocationCounter allocations;
  // The model's weights as the host holds them (cpu: what every session
  // reads in place), once for every batch size.
  exec::CountedAllocation host_weights;
  // cuda: the device weights of every batch size, uploaded once; each
  // context's engines read them (cuda::Weights: no activations, streams or
  // graph of its own).
  std::unique_ptr<cuda::Weights> device_weights;
  // Sessions are opened under `open`: contexts may be created from several threads.
  std::mutex open;
  // cuda: the first sticky CUDA error a call met (the context is lost; every
  // later call refuses with it); empty while the engine is usable.
  std::mutex lost_mutex;
  std::string lost;
};

struct ExecutionContext::Impl {
  std::shared_ptr<Engine::Impl> engine;
  // Per variant (batch size), in the engine's order.
  std::vector<std::unique_ptr<exec::Session>> sessions;  // cpu, sim
  std::vector<std::unique_ptr<cuda::Engine>> gpus;       // cuda
};

namespace {

std::string quoted_names(const std::vector<TensorDesc>& tensors) {
  std::string names;
  for (const TensorDesc& t : tensors) names += (names.empty() ? "'" : ", '") + t.name + "'";
  return names;
}

// Every tensor of `model` given once, none other; `what` is "input" or "output".
template <typename Map>
void check_names(const Map& given, const std::vector<TensorDesc>& model, const char* what) {
  for (const auto& [name, tensor] : given) {
    const bool known = std::any_of(model.begin(), model.end(),
                                   [&](const TensorDesc& t) { return t.name == name; });
    if (!known)
      user_error("unknown {} '{}': the model's {}s are {}", what, name, what, quoted_names(model));
  }
  for (const TensorDesc& t : model) {
    if (given.count(t.name) == 0) {
      user_error("{} '{}' is missing: the model's {}s are {}", what, t.name, what,
                 quoted_names(model));
    }
  }
}

void check_shape(const std::vector<int64_t>& shape, const TensorDesc& model, const char* what) {
  if (shape != model.shape) {
    user_error("{} '{}' has shape {} but the model needs {}", what, model.name,
               ir::to_string(shape), ir::to_string(model.shape));
  }
}

void check_view(const TensorView& view, const TensorDesc& model, const char* what,
                DeviceKind device, const char* call) {
  if (view.device != device) {
    user_error("{} '{}' is in {} memory but {}() takes {} memory{}", what, model.name,
               to_string(view.device), call, to_string(device),
               device == DeviceKind::kCpu ? "; use enqueue() for device buffers"
                                          : "; use run() for host tensors");
  }
  check_shape(view.shape, model, what);
  // float32 for every engine (converted where the model's I/O is 16-bit, as
  // Tensor is), or the engine's own 16-bit I/O type, taken as is.
  if (view.type != DataType::kFloat32 && view.type != model.type) {
    user_error("{} '{}' holds {} but the engine's {}s are {}; pass float32{}", what, model.name,
               to_string(view.type), what, to_string(model.type),
               model.type == DataType::kFloat32
                   ? " (16-bit data is for a schedule made with --half-io or a model typed so)"
                   : fmt::format(" or {}", to_string(model.type)));
  }
  if (view.data == nullptr && model.elements() > 0)
    user_error("{} '{}' has no data (a null pointer)", what, model.name);
}

// The engine's calls on the GPU: an engine whose CUDA context was lost (a
// sticky error, in any of its contexts) refuses every later call with the
// first such error, rather than an error of whatever call comes next.
void refuse_if_lost(Engine::Impl& e) {
  const std::lock_guard<std::mutex> lock(e.lost_mutex);
  if (!e.lost.empty()) {
    throw DeviceError(
        "this engine is unusable: an earlier call met a sticky CUDA error, after which every "
        "CUDA call of the process fails (" +
            e.lost + "); destroy the engine and run it in a new process",
        true);
  }
}

template <typename Call>
decltype(auto) on_device(Engine::Impl& e, Call&& call) {
  refuse_if_lost(e);
  try {
    return call();
  } catch (const DeviceError& error) {
    if (error.sticky()) {
      const std::lock_guard<std::mutex> lock(e.lost_mutex);
      if (e.lost.empty()) e.lost = error.what();
    }
    throw;
  }
}

// A view of 16-bit values read into float32 (the engine computes on
// float32 host tensors and rounds where the graph stores 16-bit values).
std::vector<float> host_floats(const TensorView& view, int64_t elements) {
  std::vector<float> data(static_cast<size_t>(elements));
  if (view.type == DataType::kFloat32) {
    const auto* values = static_cast<const float*>(view.data);
    std::copy(values, values + elements, data.begin());
    return data;
  }
  const ir::ElementType type = element_type(view.type);
  const auto* bits = static_cast<const uint16_t*>(view.data);
  for (int64_t i = 0; i < elements; ++i) data[static_cast<size_t>(i)] = ir::from_bits(bits[i], type);
  return data;
}

void write_host(const std::vector<float>& values, const TensorView& view) {
  if (view.type == DataType::kFloat32) {
    std::copy(values.begin(), values.end(), static_cast<float*>(view.data));
    return;
  }
  const ir::ElementType type = element_type(view.type);
  auto* bits = static_cast<uint16_t*>(view.data);
  for (size_t i = 0; i < values.size(); ++i) bits[i] = static_cast<uint16_t>(ir::to_bits(values[i], type));
}

const char* computes_nothing_hint =
    "use predict() for its predicted latency, or backend cpu or cuda for outputs";

// The variant (batch size) the given inputs are for: the one whose batch is
// the first model input's first dimension. With one variant it is that one
// whatever the shapes (check_shape then names what does not fit).
template <typename Map, typename ShapeOf>
size_t choose_variant(const Engine::Impl& e, const Map& given, ShapeOf shape_of) {
  if (e.variants.size() == 1 || e.variants[0].inputs.empty()) return 0;
  const TensorDesc& first = e.variants[0].inputs.front();
  const auto it = given.find(first.name);
  if (it == given.end()) return 0;  // check_names says it is missing
  const std::vector<int64_t>& shape = shape_of(it->second);
  const int64_t batch = shape.empty() ? -1 : shape.front();
  std::string held;
  for (size_t v = 0; v < e.variants.size(); ++v) {
    if (e.variants[v].batch == batch) return v;
    held += (held.empty() ? "" : ", ") + std::to_string(e.variants[v].batch);
  }
  user_error(
      "input '{}' has batch {} (shape {}) but the engine holds batch sizes {}; give one of them, "
      "or load the engine with a schedule for batch {} too",
      first.name, batch, ir::to_string(shape), held, batch);
}

const std::vector<int64_t>& tensor_shape(const Tensor& t) { return t.shape; }
const std::vector<int64_t>& view_shape(const TensorView& t) { return t.shape; }

}  // namespace

// --- ExecutionContext ---

ExecutionContext::ExecutionContext(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ExecutionContext::~ExecutionContext() = default;

TensorMap ExecutionContext::run(const TensorMap& inputs) {
  Engine::Impl& e = *impl_->engine;
  if (!e.entry->traits.computes_outputs) {
    user_error("run(): the {} backend computes no outputs ({}); {}", e.entry->name,
               e.entry->traits.description, computes_nothing_hint);
  }
  const size_t index = choose_variant(e, inputs, tensor_shape);
  const Variant& v = e.variants[index];
  check_names(inputs, v.inputs, "input");
  for (const TensorDesc& t : v.inputs) {
    const Tensor& given = inputs.at(t.name);
    check_shape(given.shape, t, "input");
    if (static_cast<int64_t>(given.data.size()) != t.elements()) {
      user_error("input '{}' holds {} values but its shape {} has {}", t.name, given.data.size(),
                 ir::to_string(given.shape), t.elements());
    }
  }
  TensorMap outputs;
  if (!impl_->gpus.empty()) {
    cuda::Engine& gpu = *impl_->gpus[index];
    cuda::TensorMap device_inputs;
    for (const auto& [name, tensor] : inputs) device_inputs[name] = tensor.data;
    cuda::TensorMap results = on_device(e, [&] { return gpu.run(device_inputs); });
    for (const TensorDesc& t : v.outputs)
      outputs[t.name] = Tensor{t.shape, std::move(results.at(t.name))};
    return outputs;
  }
  exec::TensorMap host_inputs;
  for (const auto& [name, tensor] : inputs)
    host_inputs[name] = exec::HostTensor(tensor.shape, tensor.data);
  exec::TensorMap results = impl_->sessions[index]->run(host_inputs);
  for (const TensorDesc& t : v.outputs) {
    exec::HostTensor& r = results.at(t.name);
    outputs[t.name] = Tensor{std::move(r.shape), std::move(r.data)};
  }
  return outputs;
}

void ExecutionContext::run(const TensorViewMap& inputs, const TensorViewMap& outputs) {
  const Engine::Impl& e = *impl_->engine;
  const Variant& v = e.variants[choose_variant(e, inputs, view_shape)];
  check_names(inputs, v.inputs, "input");
  check_names(outputs, v.outputs, "output");
  TensorMap host;
  for (const TensorDesc& t : v.inputs) {
    const TensorView& view = inputs.at(t.name);
    check_view(view, t, "input", DeviceKind::kCpu, "run");
    host[t.name] = Tensor{t.shape, host_floats(view, t.elements())};
  }
  for (const TensorDesc& t : v.outputs)
    check_view(outputs.at(t.name), t, "output", DeviceKind::kCpu, "run");
  const TensorMap results = run(host);
  for (const TensorDesc& t : v.outputs) write_host(results.at(t.name).data, outputs.at(t.name));
}

void ExecutionContext::enqueue(const TensorViewMap& inputs, const TensorViewMap& outputs,
                               void* cuda_stream) {
  Engine::Impl& e = *impl_->engine;
  if (impl_->gpus.empty()) {
    user_error(
        "enqueue() queues work on a CUDA stream, and this engine runs on the {} backend; use "
        "run(), or create the engine with backend cuda",
        e.entry->name);
  }
  const size_t index = choose_variant(e, inputs, view_shape);
  const Variant& v = e.variants[index];
  // Refused by the launch mode the engine was loaded with, not by whether its
  // plan happens to hold a host synchronization: a schedule without stage
  // barriers lowers without one, yet the caller asked for the paper's engine.
  if (v.launch == "synced") {
    user_error(
        "this engine runs with synced launches (the host synchronizes the device after each "
        "stage, the IOS paper's engine), which enqueue cannot do without a host synchronization; "
        "load it with launch graph or plain, or run it on host buffers");
  }
  check_names(inputs, v.inputs, "input");
  check_names(outputs, v.outputs, "output");
  for (const TensorDesc& t : v.inputs)
    check_view(inputs.at(t.name), t, "input", DeviceKind::kCuda, "enqueue");
  for (const TensorDesc& t : v.outputs)
    check_view(outputs.at(t.name), t, "output", DeviceKind::kCuda, "enqueue");
  cuda::Engine& gpu = *impl_->gpus[index];
  std::vector<cuda::Engine::CallerBuffer> in, out;
  for (const std::string& name : gpu.input_names()) {
    const TensorView& view = inputs.at(name);
    in.push_back({view.data, element_type(view.type)});
  }
  for (const std::string& name : gpu.output_names()) {
    const TensorView& view = outputs.at(name);
    out.push_back({view.data, element_type(view.type)});
  }
  on_device(e, [&] { gpu.enqueue(in, out, cuda_stream); });
}

Prediction ExecutionContext::predict() {
  const Engine::Impl& e = *impl_->engine;
  if (e.entry->traits.measured) {
    user_error(
        "predict(): the {} backend runs the model ({}); time run() or enqueue() yourself, or "
        "create the engine with backend sim for a prediction",
        e.entry->name, e.entry->traits.description);
  }
  // The first schedule's (an engine of several batch sizes predicts for the first given).
  const exec::TimingSamples samples = impl_->sessions.front()->time(0, 1);
  IOS_ASSERT(!samples.latency_ms.empty(), "the {} backend predicted nothing", e.entry->name);
  const exec::Backend& backend = *e.variants.front().backend;
  return {samples.latency_ms.front(), backend.device_name(), backend.prediction_note()};
}

// --- Engine ---

namespace {

// The options every schedule of the engine is loaded with, checked once.
struct Checked {
  std::optional<ir::Precision> asked;
  exec::ConvKernels conv_kernels = exec::ConvKernels::kLegacy;
};

Checked check_options(Engine::Impl& e, const EngineOptions& options) {
  e.options = options;
  e.entry = &backends::find(options.backend);  // an unknown name is refused before the import
  if (!options.launch.empty() && std::find(sched::kLaunchModes.begin(), sched::kLaunchModes.end(),
                                           options.launch) == sched::kLaunchModes.end()) {
    user_error("launch '{}': expected graph, plain or synced", options.launch);
  }
  Checked checked;
  // The API takes the precision by name; parsed here, once.
  checked.asked = options.precision.empty()
                      ? std::nullopt
                      : std::optional(ir::parse_precision(options.precision, "precision"));
  if (options.threads < 0)
    user_error("threads {}: expected 0 (all cores) or more", options.threads);
  if (options.device < 0) {
    user_error("device {}: expected a CUDA device ordinal, 0 (the first GPU) or more",
               options.device);
  }
  if (options.device != 0 && e.entry->name != "cuda") {
    user_error("device {}: the {} backend runs on no GPU; device is for backend cuda (drop it)",
               options.device, e.entry->name);
  }
  checked.conv_kernels = options.conv_kernels.empty()
                             ? exec::ConvKernels::kLegacy
                             : exec::parse_conv_kernels(options.conv_kernels, "conv_kernels");
  return checked;
}

// The weights of `graph` made the very host tensors of `first` (the same
// model imported at another batch): a constant of the same name and the same
// values is shared, so the engine holds each weight once whatever the number
// of batch sizes. A constant that differs (folded from a batch-dependent
// shape, say) stays the variant's own.
void share_weights(ir::Graph& graph, const ir::Graph& first) {
  std::map<std::string, const ir::Tensor*> by_name;
  for (const ir::Tensor& t : first.tensors()) {
    if (t.is_constant()) by_name.emplace(t.name, &t);
  }
  for (size_t id = 0; id < graph.num_tensors(); ++id) {
    ir::Tensor& t = graph.tensor(static_cast<ir::TensorId>(id));
    if (!t.is_constant()) continue;
    const auto it = by_name.find(t.name);
    if (it == by_name.end() || it->second->data == t.data) continue;
    const ir::Tensor& shared = *it->second;
    if (shared.shape == t.shape && shared.type == t.type && *shared.data == *t.data)
      t.data = shared.data;
  }
}

// Bytes of the distinct host weight tensors of every variant: what the
// engine holds, once.
int64_t host_weight_bytes(const std::vector<Variant>& variants) {
  std::vector<const std::vector<float>*> seen;
  int64_t bytes = 0;
  for (const Variant& v : variants) {
    for (const ir::Tensor& t : v.prepared->model.graph.tensors()) {
      if (!t.is_constant() || std::find(seen.begin(), seen.end(), t.data.get()) != seen.end())
        continue;
      seen.push_back(t.data.get());
      bytes += static_cast<int64_t>(t.data->size() * sizeof(float));
    }
  }
  return bytes;
}

// One schedule (null: the sequential one) imported, validated and lowered
// for the backend; `request` gives the shapes (or none: the schedule's).
Variant load_variant(Engine::Impl& e, const Checked& checked, const std::string& model_path,
                     const Schedule* schedule, const Schedule::Impl* document,
                     const engine::ShapeRequest& request) {
  const EngineOptions& options = e.options;
  Variant v;
  const std::string source = document != nullptr ? document->source : std::string();
  v.prepared = engine::import_for_schedule(model_path, request,
                                           document ? &document->document : nullptr, source);
  if (!e.variants.empty())
    share_weights(v.prepared->model.graph, e.variants.front().prepared->model.graph);
  if (document != nullptr) {
    v.schedule = engine::load_schedule(*v.prepared, document->document, source, options.force,
                                       options.retarget);
  } else {
    v.schedule = engine::sequential_schedule(*v.prepared);
  }
  v.launch = !options.launch.empty()                   ? options.launch
             : schedule && !schedule->launch().empty() ? schedule->launch()
                                                       : "graph";
  v.plan = exec::lower(*v.prepared->units, v.schedule, engine::stage_join(v.launch));

  // The types the graph takes and gives: 16-bit for a schedule made with
  // --half-io, or a model typed so; float32 otherwise.
  const ir::Graph& graph = v.prepared->model.graph;
  auto input_type = [&](const std::string& name) {
    for (ir::TensorId t : graph.inputs()) {
      if (graph.tensor(t).name == name) return data_type(graph.tensor(t).type);
    }
    return DataType::kFloat32;
  };
  for (const auto& [name, shape] : v.prepared->info().inputs)
    v.inputs.push_back({name, shape, input_type(name)});
  for (ir::TensorId t : graph.outputs()) {
    v.outputs.push_back(
        {graph.tensor(t).name, graph.tensor(t).shape, data_type(graph.tensor(t).type)});
  }
  v.batch = !v.inputs.empty() && !v.inputs.front().shape.empty() ? v.inputs.front().shape.front()
                                                                  : 0;

  const ir::Precision precision = checked.asked.value_or(v.prepared->precision.value);
  if (e.entry->name == "cuda") {
    v.cuda_options.math = precision.math();
    v.cuda_options.cuda_graph = v.launch == "graph";
    v.cuda_options.conv_kernels = checked.conv_kernels;
    v.cuda_options.plan_cache = options.plan_cache;
    v.cuda_options.device = options.device;
    v.cuda_options.allocations = &e.allocations;
    return v;
  }
  exec::BackendOptions backend_options;
  backend_options.launch = v.launch;
  backend_options.precision = precision;
  backend_options.threads = options.threads;
  backend_options.device_profile = options.device_profile;
  backend_options.conv_kernels = checked.conv_kernels;
  backend_options.plan_cache = options.plan_cache;
  backend_options.allocations = &e.allocations;
  if (document != nullptr) backend_options.schedule_device = v.schedule.device.name;
  v.backend = e.entry->make(*v.prepared->units, backend_options);
  return v;
}

// What the engine holds once for all its batch sizes: the host weights
// (counted), or for cuda the device weights, uploaded for every variant's
// plan, with the activation memory each needs.
void hold_weights(Engine::Impl& e) {
  if (e.entry->name != "cuda") {
    e.host_weights = exec::CountedAllocation(&e.allocations, exec::AllocationKind::kWeights,
                                             host_weight_bytes(e.variants));
    return;
  }
  std::vector<cuda::Weights::Plan> plans;
  std::vector<cuda::EngineOptions> options;
  for (const Variant& v : e.variants) {
    plans.emplace_back(v.prepared->units.get(), &v.plan);
    options.push_back(v.cuda_options);
  }
  e.device_weights = std::make_unique<cuda::Weights>(plans, options);
  for (size_t i = 0; i < e.variants.size(); ++i) {
    e.variants[i].cuda_options.weights = e.device_weights.get();
    e.variants[i].arena_bytes = e.device_weights->arena_bytes(i);
  }
}

std::shared_ptr<Engine::Impl> load_engine(const std::string& model_path, const Schedule* schedule,
                                          const Schedule::Impl* document,
                                          const EngineOptions& options) {
  auto impl = std::make_shared<Engine::Impl>();
  Engine::Impl& e = *impl;
  const Checked checked = check_options(e, options);
  const engine::ShapeRequest request{options.batch, options.rewrite_batch, options.input_shapes,
                                     options.force, checked.asked,         options.retarget};
  engine::reject_retarget_without_effect(request, document != nullptr ? 1 : 0);
  e.variants.push_back(load_variant(e, checked, model_path, schedule, document, request));
  hold_weights(e);
  return impl;
}

// Several schedules of one model, one per batch size, sharing its weights.
using Given = std::pair<const Schedule*, const Schedule::Impl*>;

std::shared_ptr<Engine::Impl> load_engine(const std::string& model_path,
                                          const std::vector<Given>& schedules,
                                          const EngineOptions& options) {
  if (schedules.empty())
    user_error("no schedule given: an engine needs one or more, one per batch size");
  if (schedules.size() > 1 && (options.batch != 0 || !options.input_shapes.empty())) {
    user_error(
        "batch and input_shapes are for an engine of one schedule: with {} schedules each runs "
        "at the batch it was made for (drop them)",
        schedules.size());
  }
  if (schedules.size() == 1)
    return load_engine(model_path, schedules[0].first, schedules[0].second, options);
  auto impl = std::make_shared<Engine::Impl>();
  Engine::Impl& e = *impl;
  const Checked checked = check_options(e, options);
  const engine::ShapeRequest request{0, options.rewrite_batch, {}, options.force, checked.asked,
                                     options.retarget};
  for (const auto& [schedule, document] : schedules) {
    Variant v = load_variant(e, checked, model_path, schedule, document, request);
    for (const Variant& other : e.variants) {
      if (other.batch == v.batch) {
        user_error(
            "schedules {} and {} are both for batch {}: an engine holds one schedule per batch "
            "size; drop one",
            &other - e.variants.data() + 1, e.variants.size() + 1, v.batch);
      }
    }
    e.variants.push_back(std::move(v));
  }
  hold_weights(e);
  return impl;
}

}  // namespace

Engine::Engine(const std::string& model_path, const Schedule& schedule,
               const EngineOptions& options)
    : impl_(load_engine(model_path, &schedule, schedule.impl_.get(), options)) {}

Engine::Engine(const std::string& model_path, const std::vector<Schedule>& schedules,
               const EngineOptions& options)
    : impl_(load_engine(model_path,
                        [&] {
                          std::vector<Given> given;
                          for (const Schedule& s : schedules) given.emplace_back(&s, s.impl_.get());
                          return given;
                        }(),
                        options)) {}

Engine::Engine(const std::string& model_path, const EngineOptions& options)
    : impl_(load_engine(model_path, nullptr, nullptr, options)) {}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

const std::vector<TensorDesc>& Engine::inputs() const { return impl_->variants.front().inputs; }
const std::vector<TensorDesc>& Engine::outputs() const { return impl_->variants.front().outputs; }

std::vector<int64_t> Engine::batch_sizes() const {
  std::vector<int64_t> sizes;
  for (const Variant& v : impl_->variants) sizes.push_back(v.batch);
  return sizes;
}

const std::vector<TensorDesc>& Engine::inputs(int64_t batch) const {
  for (const Variant& v : impl_->variants) {
    if (v.batch == batch) return v.inputs;
  }
  user_error("batch {}: the engine holds batch sizes {}", batch, fmt::join(batch_sizes(), ", "));
}

const std::vector<TensorDesc>& Engine::outputs(int64_t batch) const {
  for (const Variant& v : impl_->variants) {
    if (v.batch == batch) return v.outputs;
  }
  user_error("batch {}: the engine holds batch sizes {}", batch, fmt::join(batch_sizes(), ", "));
}

const std::string& Engine::backend() const { return impl_->entry->name; }
bool Engine::computes_outputs() const { return impl_->entry->traits.computes_outputs; }

int Engine::device() const { return impl_->options.device; }

namespace {

// Where each batch size's activations start in a context's caller memory:
// the first at its start, each next one at the 256-byte boundary (cudaMalloc's
// alignment) after the previous one's end; the last entry is the total.
std::vector<size_t> arena_offsets(const std::vector<Variant>& variants) {
  std::vector<size_t> offsets{0};
  for (const Variant& v : variants) {
    const size_t end = offsets.back() + v.arena_bytes;
    offsets.push_back(&v == &variants.back() ? end : (end + 255) / 256 * 256);
  }
  return offsets;
}

}  // namespace

size_t Engine::device_memory_size() const { return arena_offsets(impl_->variants).back(); }

Allocations Engine::allocations() const {
  auto totals = [&](exec::AllocationKind kind) {
    const exec::AllocationTotals t = impl_->allocations.live(kind);
    return AllocationCount{t.count, t.bytes};
  };
  return {totals(exec::AllocationKind::kWeights), totals(exec::AllocationKind::kActivations),
          totals(exec::AllocationKind::kWorkspaces)};
}

std::unique_ptr<ExecutionContext> Engine::create_context(const ContextOptions& options) const {
  auto context = std::make_unique<ExecutionContext::Impl>();
  context->engine = impl_;
  if (impl_->entry->name == "cuda") {
    // One activation region per batch size, carved from the caller's memory
    // in the engine's order (device_memory_size() is their sum): a region
    // that does not fit gets what is left, which the runtime refuses by size.
    const std::vector<size_t> offsets = arena_offsets(impl_->variants);
    auto* memory = static_cast<char*>(options.device_memory);
    for (size_t i = 0; i < impl_->variants.size(); ++i) {
      const Variant& v = impl_->variants[i];
      cuda::EngineOptions cuda_options = v.cuda_options;
      if (memory != nullptr) {
        const size_t start = std::min(offsets[i], options.device_memory_bytes);
        cuda_options.arena = memory + start;
        cuda_options.arena_bytes = std::min(options.device_memory_bytes - start, v.arena_bytes);
      }
      context->gpus.push_back(on_device(*impl_, [&] {
        return std::make_unique<cuda::Engine>(*v.prepared->units, v.plan, cuda_options);
      }));
    }
  } else {
    if (options.device_memory != nullptr) {
      user_error(
          "device memory is for a context of the cuda backend; the {} backend uses host memory",
          impl_->entry->name);
    }
    const std::lock_guard<std::mutex> lock(impl_->open);
    for (const Variant& v : impl_->variants) context->sessions.push_back(v.backend->open(v.plan));
  }
  return std::unique_ptr<ExecutionContext>(new ExecutionContext(std::move(context)));
}

}  // namespace ios
