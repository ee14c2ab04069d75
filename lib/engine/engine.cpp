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

struct Engine::Impl {
  EngineOptions options;
  std::unique_ptr<model::PreparedModel> prepared;
  sched::Schedule schedule;
  exec::ExecPlan plan;
  std::string launch;  // effective: the options', else the schedule's, else graph
  std::vector<TensorDesc> inputs, outputs;
  const exec::BackendEntry* entry = nullptr;
  // cpu, sim: the backend, which opens a session per context (under `open`:
  // contexts may be created from several threads).
  std::unique_ptr<exec::Backend> backend;
  std::mutex open;
  // cuda: the engine that holds the device weights every context uses.
  std::unique_ptr<cuda::Engine> weights;
  cuda::EngineOptions cuda_options;
  // cuda: the first sticky CUDA error a call met (the context is lost; every
  // later call refuses with it); empty while the engine is usable.
  std::mutex lost_mutex;
  std::string lost;
};

struct ExecutionContext::Impl {
  std::shared_ptr<Engine::Impl> engine;
  std::unique_ptr<exec::Session> session;  // cpu, sim
  std::unique_ptr<cuda::Engine> gpu;       // cuda
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
  check_names(inputs, e.inputs, "input");
  for (const TensorDesc& t : e.inputs) {
    const Tensor& given = inputs.at(t.name);
    check_shape(given.shape, t, "input");
    if (static_cast<int64_t>(given.data.size()) != t.elements()) {
      user_error("input '{}' holds {} values but its shape {} has {}", t.name, given.data.size(),
                 ir::to_string(given.shape), t.elements());
    }
  }
  TensorMap outputs;
  if (impl_->gpu) {
    cuda::TensorMap device_inputs;
    for (const auto& [name, tensor] : inputs) device_inputs[name] = tensor.data;
    cuda::TensorMap results =
        on_device(*impl_->engine, [&] { return impl_->gpu->run(device_inputs); });
    for (const TensorDesc& t : e.outputs)
      outputs[t.name] = Tensor{t.shape, std::move(results.at(t.name))};
    return outputs;
  }
  exec::TensorMap host_inputs;
  for (const auto& [name, tensor] : inputs)
    host_inputs[name] = exec::HostTensor(tensor.shape, tensor.data);
  exec::TensorMap results = impl_->session->run(host_inputs);
  for (const TensorDesc& t : e.outputs) {
    exec::HostTensor& r = results.at(t.name);
    outputs[t.name] = Tensor{std::move(r.shape), std::move(r.data)};
  }
  return outputs;
}

void ExecutionContext::run(const TensorViewMap& inputs, const TensorViewMap& outputs) {
  const Engine::Impl& e = *impl_->engine;
  check_names(inputs, e.inputs, "input");
  check_names(outputs, e.outputs, "output");
  TensorMap host;
  for (const TensorDesc& t : e.inputs) {
    const TensorView& view = inputs.at(t.name);
    check_view(view, t, "input", DeviceKind::kCpu, "run");
    host[t.name] = Tensor{t.shape, host_floats(view, t.elements())};
  }
  for (const TensorDesc& t : e.outputs)
    check_view(outputs.at(t.name), t, "output", DeviceKind::kCpu, "run");
  const TensorMap results = run(host);
  for (const TensorDesc& t : e.outputs) write_host(results.at(t.name).data, outputs.at(t.name));
}

void ExecutionContext::enqueue(const TensorViewMap& inputs, const TensorViewMap& outputs,
                               void* cuda_stream) {
  Engine::Impl& e = *impl_->engine;
  if (!impl_->gpu) {
    user_error(
        "enqueue() queues work on a CUDA stream, and this engine runs on the {} backend; use "
        "run(), or create the engine with backend cuda",
        e.entry->name);
  }
  // Refused by the launch mode the engine was loaded with, not by whether its
  // plan happens to hold a host synchronization: a schedule without stage
  // barriers lowers without one, yet the caller asked for the paper's engine.
  if (e.launch == "synced") {
    user_error(
        "this engine runs with synced launches (the host synchronizes the device after each "
        "stage, the IOS paper's engine), which enqueue cannot do without a host synchronization; "
        "load it with launch graph or plain, or run it on host buffers");
  }
  check_names(inputs, e.inputs, "input");
  check_names(outputs, e.outputs, "output");
  for (const TensorDesc& t : e.inputs)
    check_view(inputs.at(t.name), t, "input", DeviceKind::kCuda, "enqueue");
  for (const TensorDesc& t : e.outputs)
    check_view(outputs.at(t.name), t, "output", DeviceKind::kCuda, "enqueue");
  std::vector<cuda::Engine::CallerBuffer> in, out;
  for (const std::string& name : impl_->gpu->input_names()) {
    const TensorView& view = inputs.at(name);
    in.push_back({view.data, element_type(view.type)});
  }
  for (const std::string& name : impl_->gpu->output_names()) {
    const TensorView& view = outputs.at(name);
    out.push_back({view.data, element_type(view.type)});
  }
  on_device(e, [&] { impl_->gpu->enqueue(in, out, cuda_stream); });
}

Prediction ExecutionContext::predict() {
  const Engine::Impl& e = *impl_->engine;
  if (e.entry->traits.measured) {
    user_error(
        "predict(): the {} backend runs the model ({}); time run() or enqueue() yourself, or "
        "create the engine with backend sim for a prediction",
        e.entry->name, e.entry->traits.description);
  }
  const exec::TimingSamples samples = impl_->session->time(0, 1);
  IOS_ASSERT(!samples.latency_ms.empty(), "the {} backend predicted nothing", e.entry->name);
  return {samples.latency_ms.front(), e.backend->device_name(), e.backend->prediction_note()};
}

// --- Engine ---

namespace {

std::shared_ptr<Engine::Impl> load_engine(const std::string& model_path, const Schedule* schedule,
                                          const Schedule::Impl* document,
                                          const EngineOptions& options) {
  auto impl = std::make_shared<Engine::Impl>();
  Engine::Impl& e = *impl;
  e.options = options;
  e.entry = &backends::find(options.backend);  // an unknown name is refused before the import
  if (!options.launch.empty() && std::find(sched::kLaunchModes.begin(), sched::kLaunchModes.end(),
                                           options.launch) == sched::kLaunchModes.end()) {
    user_error("launch '{}': expected graph, plain or synced", options.launch);
  }
  // The API takes the precision by name; parsed here, once.
  const std::optional<ir::Precision> asked =
      options.precision.empty() ? std::nullopt
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
  const exec::ConvKernels conv_kernels =
      options.conv_kernels.empty() ? exec::ConvKernels::kLegacy
                                   : exec::parse_conv_kernels(options.conv_kernels, "conv_kernels");

  const engine::ShapeRequest request{options.batch, options.rewrite_batch, options.input_shapes,
                                     options.force, asked,                 options.retarget};
  engine::reject_retarget_without_effect(request, document != nullptr ? 1 : 0);
  const std::string source = document != nullptr ? document->source : std::string();
  e.prepared = engine::import_for_schedule(model_path, request,
                                           document ? &document->document : nullptr, source);
  if (document != nullptr) {
    e.schedule = engine::load_schedule(*e.prepared, document->document, source, options.force,
                                       options.retarget);
  } else {
    e.schedule = engine::sequential_schedule(*e.prepared);
  }
  e.launch = !options.launch.empty()                   ? options.launch
             : schedule && !schedule->launch().empty() ? schedule->launch()
                                                       : "graph";
  e.plan = exec::lower(*e.prepared->units, e.schedule, engine::stage_join(e.launch));

  // The types the graph takes and gives: 16-bit for a schedule made with
  // --half-io, or a model typed so; float32 otherwise.
  const ir::Graph& graph = e.prepared->model.graph;
  auto input_type = [&](const std::string& name) {
    for (ir::TensorId t : graph.inputs()) {
      if (graph.tensor(t).name == name) return data_type(graph.tensor(t).type);
    }
    return DataType::kFloat32;
  };
  for (const auto& [name, shape] : e.prepared->info().inputs)
    e.inputs.push_back({name, shape, input_type(name)});
  for (ir::TensorId t : graph.outputs()) {
    e.outputs.push_back(
        {graph.tensor(t).name, graph.tensor(t).shape, data_type(graph.tensor(t).type)});
  }

  const ir::Precision precision = asked.value_or(e.prepared->precision.value);
  if (e.entry->name == "cuda") {
    e.cuda_options.math = precision.math();
    e.cuda_options.cuda_graph = e.launch == "graph";
    e.cuda_options.conv_kernels = conv_kernels;
    e.cuda_options.plan_cache = options.plan_cache;
    e.cuda_options.device = options.device;
    e.weights = std::make_unique<cuda::Engine>(*e.prepared->units, e.plan, e.cuda_options);
    e.cuda_options.weights_from = e.weights.get();
    return impl;
  }
  exec::BackendOptions backend_options;
  backend_options.launch = e.launch;
  backend_options.precision = precision;
  backend_options.threads = options.threads;
  backend_options.device_profile = options.device_profile;
  backend_options.conv_kernels = conv_kernels;
  backend_options.plan_cache = options.plan_cache;
  if (document != nullptr) backend_options.schedule_device = e.schedule.device.name;
  e.backend = e.entry->make(*e.prepared->units, backend_options);
  return impl;
}

}  // namespace

Engine::Engine(const std::string& model_path, const Schedule& schedule,
               const EngineOptions& options)
    : impl_(load_engine(model_path, &schedule, schedule.impl_.get(), options)) {}

Engine::Engine(const std::string& model_path, const EngineOptions& options)
    : impl_(load_engine(model_path, nullptr, nullptr, options)) {}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

const std::vector<TensorDesc>& Engine::inputs() const { return impl_->inputs; }
const std::vector<TensorDesc>& Engine::outputs() const { return impl_->outputs; }
const std::string& Engine::backend() const { return impl_->entry->name; }
bool Engine::computes_outputs() const { return impl_->entry->traits.computes_outputs; }

int Engine::device() const { return impl_->options.device; }

size_t Engine::device_memory_size() const {
  return impl_->weights ? impl_->weights->info().arena_bytes : 0;
}

std::unique_ptr<ExecutionContext> Engine::create_context(const ContextOptions& options) const {
  auto context = std::make_unique<ExecutionContext::Impl>();
  context->engine = impl_;
  if (impl_->weights) {
    cuda::EngineOptions cuda_options = impl_->cuda_options;
    cuda_options.arena = options.device_memory;
    cuda_options.arena_bytes = options.device_memory_bytes;
    context->gpu = on_device(*impl_, [&] {
      return std::make_unique<cuda::Engine>(*impl_->prepared->units, impl_->plan, cuda_options);
    });
  } else {
    if (options.device_memory != nullptr) {
      user_error(
          "device memory is for a context of the cuda backend; the {} backend uses host memory",
          impl_->entry->name);
    }
    const std::lock_guard<std::mutex> lock(impl_->open);
    context->session = impl_->backend->open(impl_->plan);
  }
  return std::unique_ptr<ExecutionContext>(new ExecutionContext(std::move(context)));
}

}  // namespace ios
