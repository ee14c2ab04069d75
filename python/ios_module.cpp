// The Python module `ios` (pybind11): ios.optimize(), ios.Schedule and
// ios.Engine over the public C++ API (include/ios/engine.h), taking numpy
// arrays and any DLPack tensor (torch's included) and returning tensors of
// the kind it was given. Reference: docs/api.md ("Python").
#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ios/engine.h"

namespace py = pybind11;

namespace {

// Where a caller's tensor lives and what kind of object it was, which the
// outputs follow: numpy arrays give numpy arrays, torch tensors torch
// tensors (on the same device); other DLPack producers get numpy arrays.
enum class Kind { kNumpy, kTorch };

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t d : shape) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text.empty() ? "scalar" : text;
}

std::string dlpack_type_name(DLDataType type) {
  const char* code = type.code == kDLFloat    ? "float"
                     : type.code == kDLInt    ? "int"
                     : type.code == kDLUInt   ? "uint"
                     : type.code == kDLBfloat ? "bfloat"
                                              : "code";
  return std::string(code) + std::to_string(type.bits) +
         (type.lanes != 1 ? "x" + std::to_string(type.lanes) : "");
}

// One input tensor as a view of the caller's memory, kept alive (and, for
// DLPack, released to its producer) by this object.
class Input {
 public:
  // `expected`: the model's input of that name, whose shape is checked
  // before anything is copied.
  Input(const std::string& name, const py::object& value, const ios::TensorDesc& expected) {
    try {
      if (py::isinstance<py::array>(value)) {
        from_numpy(name, py::reinterpret_borrow<py::array>(value), expected);
      } else if (py::hasattr(value, "__dlpack__") || py::isinstance<py::capsule>(value)) {
        from_dlpack(name, value, expected);
      } else {
        throw ios::UserError(
            "input '" + name + "' is of type " +
            std::string(py::str(value.get_type().attr("__name__"))) +
            ": give a numpy array or a DLPack tensor (a torch tensor, for example)");
      }
    } catch (...) {
      release();  // no destructor runs for a constructor that throws
      throw;
    }
  }
  ~Input() { release(); }
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;

  const ios::TensorView& view() const { return view_; }
  Kind kind() const { return kind_; }
  const py::object& object() const { return object_; }

 private:
  // Hands a DLPack tensor back to its producer.
  void release() {
    if (managed_ != nullptr && managed_->deleter != nullptr) managed_->deleter(managed_);
    managed_ = nullptr;
  }

  // The element type and the shape are checked before the conversion, which
  // copies an array that is not row-major: a wrong-shape broadcast view of a
  // few bytes would otherwise be expanded to its full size (gigabytes) first.
  static void check_shape(const std::string& name, const std::vector<int64_t>& shape,
                          const ios::TensorDesc& expected) {
    if (shape != expected.shape) {
      throw ios::UserError("input '" + name + "' has shape " + shape_text(shape) +
                           " but the model needs " + shape_text(expected.shape));
    }
  }

  void from_numpy(const std::string& name, py::array array, const ios::TensorDesc& expected) {
    if (!array.dtype().is(py::dtype::of<float>())) {
      throw ios::UserError("input '" + name + "' has element type " +
                           std::string(py::str(array.dtype())) + " but the model needs float32");
    }
    check_shape(name, std::vector<int64_t>(array.shape(), array.shape() + array.ndim()), expected);
    // Row-major, copied only where the caller's array is not. The converting
    // constructor keeps numpy's error (array_t::ensure clears it, which left
    // pybind11 an error_already_set with no error to raise).
    try {
      array_ = py::array_t<float, py::array::c_style>(array);
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_MemoryError)) throw;
      int64_t bytes = static_cast<int64_t>(sizeof(float));
      for (int64_t d : expected.shape) bytes *= d;
      const std::string message =
          "input '" + name + "' (shape " + shape_text(expected.shape) +
          ") is not a row-major (C-contiguous) array, and its row-major copy of " +
          std::to_string(bytes) + " bytes could not be allocated: not enough memory";
      PyErr_SetString(PyExc_MemoryError, message.c_str());
      throw py::error_already_set();
    }
    kind_ = Kind::kNumpy;
    object_ = array_;
    view_.data = const_cast<float*>(array_.data());
    view_.shape.assign(array_.shape(), array_.shape() + array_.ndim());
    view_.device = ios::DeviceKind::kCpu;
  }

  // torch tensors that DLPack cannot export, refused with what to pass
  // instead before torch raises its own RuntimeError.
  static void check_torch_tensor(const std::string& name, const py::object& value) {
    const std::string layout = py::str(py::getattr(value, "layout", py::str("torch.strided")));
    if (layout != "torch.strided") {
      throw ios::UserError("input '" + name + "' is a tensor of layout " + layout +
                           " (sparse); pass tensor.to_dense()");
    }
    if (py::getattr(value, "is_meta", py::bool_(false)).cast<bool>()) {
      throw ios::UserError("input '" + name +
                           "' is on torch's meta device, which holds no data; pass a tensor "
                           "with data (on the CPU or a CUDA device)");
    }
    if (py::getattr(value, "requires_grad", py::bool_(false)).cast<bool>()) {
      throw ios::UserError("input '" + name +
                           "' requires grad (it is part of autograd's graph); pass "
                           "tensor.detach()");
    }
  }

  // The first line of the Python error now being handled.
  static std::string first_line(const py::error_already_set& e) {
    std::string text = py::str(e.value());
    if (const size_t end = text.find('\n'); end != std::string::npos) text.resize(end);
    return std::string(py::str(e.type().attr("__name__"))) + ": " + text;
  }

  void from_dlpack(const std::string& name, const py::object& value,
                   const ios::TensorDesc& expected) {
    object_ = value;
    kind_ = py::str(value.get_type().attr("__module__")).cast<std::string>().rfind("torch", 0) == 0
                ? Kind::kTorch
                : Kind::kNumpy;
    if (kind_ == Kind::kTorch) check_torch_tensor(name, value);
    py::object exported;
    if (py::isinstance<py::capsule>(value)) {
      exported = value;
    } else {
      // Any producer's refusal (a tensor DLPack cannot describe) is the
      // input's fault: one line naming it, not the producer's own exception.
      try {
        exported = value.attr("__dlpack__")();
      } catch (py::error_already_set& e) {
        throw ios::UserError("input '" + name + "': its __dlpack__() failed (" + first_line(e) +
                             "); pass a dense float32 tensor or a numpy array");
      }
    }
    if (!py::isinstance<py::capsule>(exported)) {
      throw ios::UserError("input '" + name + "': its __dlpack__() returned no DLPack capsule");
    }
    const auto capsule = py::reinterpret_borrow<py::capsule>(exported);
    if (std::string(capsule.name() != nullptr ? capsule.name() : "") != "dltensor") {
      throw ios::UserError("input '" + name +
                           "': its DLPack capsule was used already; pass the tensor itself");
    }
    managed_ = capsule.get_pointer<DLManagedTensor>();
    // The producer's capsule destructor frees a capsule still named
    // "dltensor"; this object owns it now (the DLPack protocol).
    PyCapsule_SetName(capsule.ptr(), "used_dltensor");
    const DLTensor& t = managed_->dl_tensor;
    if (t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1) {
      throw ios::UserError("input '" + name + "' has element type " + dlpack_type_name(t.dtype) +
                           " but the model needs float32");
    }
    view_.shape.assign(t.shape, t.shape + t.ndim);
    check_shape(name, view_.shape, expected);
    if (t.strides != nullptr) {
      int64_t dense_stride = 1;
      for (int i = t.ndim - 1; i >= 0; --i) {
        if (t.shape[i] != 1 && t.strides[i] != dense_stride) {
          throw ios::UserError("input '" + name + "' (shape " + shape_text(view_.shape) +
                               ") is not contiguous; pass tensor.contiguous()");
        }
        dense_stride *= t.shape[i];
      }
    }
    if (t.device.device_type == kDLCPU || t.device.device_type == kDLCUDAHost) {
      view_.device = ios::DeviceKind::kCpu;
    } else if (t.device.device_type == kDLCUDA) {
      view_.device = ios::DeviceKind::kCuda;
    } else {
      throw ios::UserError("input '" + name + "' is on a device of DLPack type " +
                           std::to_string(t.device.device_type) +
                           "; ios runs on the CPU and on CUDA devices");
    }
    view_.data = static_cast<char*>(t.data) + t.byte_offset;
  }

  py::object object_;
  py::array_t<float, py::array::c_style> array_;
  DLManagedTensor* managed_ = nullptr;
  ios::TensorView view_;
  Kind kind_ = Kind::kNumpy;
};

// Named inputs from engine(x), engine({"name": x}) or engine(name=x).
std::map<std::string, py::object> named_inputs(const ios::Engine& engine, const py::args& args,
                                               const py::kwargs& kwargs) {
  std::map<std::string, py::object> named;
  if (args.size() > 1 || (args.size() == 1 && !kwargs.empty())) {
    throw py::type_error(
        "give the inputs as one tensor (a model of one input), one dict {name: tensor}, or "
        "keywords name=tensor");
  }
  if (args.size() == 1 && py::isinstance<py::dict>(args[0])) {
    for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(args[0])) {
      named[py::str(key).cast<std::string>()] = py::reinterpret_borrow<py::object>(value);
    }
  } else if (args.size() == 1) {
    if (engine.inputs().size() != 1) {
      std::string names;
      for (const auto& t : engine.inputs()) names += (names.empty() ? "'" : ", '") + t.name + "'";
      throw ios::UserError("the model has " + std::to_string(engine.inputs().size()) +
                           " inputs; give them by name (names: " + names + ")");
    }
    named[engine.inputs()[0].name] = args[0];
  } else {
    for (const auto& [key, value] : kwargs) {
      named[py::str(key).cast<std::string>()] = py::reinterpret_borrow<py::object>(value);
    }
  }
  return named;
}

// One thread's execution context of a Python engine: the C++ context and
// the call that turns Python tensors into views and back.
class Context {
 public:
  Context(std::shared_ptr<ios::Engine> engine, std::unique_ptr<ios::ExecutionContext> context)
      : engine_(std::move(engine)), context_(std::move(context)) {}

  py::object call(const py::args& args, const py::kwargs& kwargs) {
    const std::map<std::string, py::object> named = named_inputs(*engine_, args, kwargs);
    // Every name is checked before any tensor is converted (which may copy):
    // the message is the C++ API's (ExecutionContext::run).
    std::string names;
    for (const auto& t : engine_->inputs()) names += (names.empty() ? "'" : ", '") + t.name + "'";
    std::vector<const ios::TensorDesc*> expected;
    for (const auto& [name, value] : named) {
      const auto& model = engine_->inputs();
      const auto it = std::find_if(model.begin(), model.end(),
                                   [&](const ios::TensorDesc& t) { return t.name == name; });
      if (it == model.end()) {
        throw ios::UserError("unknown input '" + name + "': the model's inputs are " + names);
      }
      expected.push_back(&*it);
    }
    std::vector<std::unique_ptr<Input>> held;
    ios::TensorViewMap inputs;
    size_t i = 0;
    for (const auto& [name, value] : named) {
      held.push_back(std::make_unique<Input>(name, value, *expected[i++]));
      inputs[name] = held.back()->view();
    }
    if (!engine_->computes_outputs()) {
      throw ios::UserError(
          "the " + engine_->backend() +
          " backend computes no outputs; call predict() for its predicted latency");
    }
    const Kind kind = held.empty() ? Kind::kNumpy : held.front()->kind();
    const bool on_gpu = !held.empty() && held.front()->view().device == ios::DeviceKind::kCuda;
    // Outputs allocated as the caller's kind, written in place.
    py::dict results;
    ios::TensorViewMap outputs;
    for (const ios::TensorDesc& t : engine_->outputs()) {
      py::object out;
      void* data = nullptr;
      if (kind == Kind::kTorch) {
        py::module_ torch = py::module_::import("torch");
        py::object device =
            on_gpu ? held.front()->object().attr("device") : py::object(py::str("cpu"));
        out = torch.attr("empty")(py::cast(t.shape), py::arg("dtype") = torch.attr("float32"),
                                  py::arg("device") = device);
        data = reinterpret_cast<void*>(out.attr("data_ptr")().cast<uintptr_t>());
      } else {
        py::array_t<float, py::array::c_style> array(t.shape);
        data = array.mutable_data();
        out = std::move(array);
      }
      outputs[t.name] = ios::TensorView{data, t.shape, ios::DataType::kFloat32,
                                        on_gpu ? ios::DeviceKind::kCuda : ios::DeviceKind::kCpu};
      results[py::str(t.name)] = out;
    }
    if (on_gpu) {
      if (engine_->backend() != "cuda") {
        throw ios::UserError(
            "input '" + named.begin()->first + "' is in cuda memory but the engine runs on the " +
            engine_->backend() + " backend; pass CPU tensors or create it with backend=\"cuda\"");
      }
      // torch's current stream on the inputs' device: the work is ordered
      // with the caller's other work, no synchronization.
      py::module_ torch = py::module_::import("torch");
      py::object stream =
          torch.attr("cuda").attr("current_stream")(held.front()->object().attr("device"));
      void* handle = reinterpret_cast<void*>(stream.attr("cuda_stream").cast<uintptr_t>());
      py::gil_scoped_release release;
      context_->enqueue(inputs, outputs, handle);
    } else {
      py::gil_scoped_release release;
      context_->run(inputs, outputs);
    }
    if (engine_->outputs().size() == 1) return results[py::str(engine_->outputs()[0].name)];
    return results;
  }

  ios::Prediction predict() {
    py::gil_scoped_release release;
    return context_->predict();
  }

 private:
  std::shared_ptr<ios::Engine> engine_;
  std::unique_ptr<ios::ExecutionContext> context_;
};

// ios.Engine: the C++ engine and, for engine(x), one context per calling
// thread (made on its first call), so that threads never share one.
class PyEngine {
 public:
  PyEngine(const py::object& model, const py::object& schedule, ios::EngineOptions options) {
    const std::string path = fspath(model);
    if (schedule.is_none()) {
      py::gil_scoped_release release;
      engine_ = std::make_shared<ios::Engine>(path, options);
    } else {
      const ios::Schedule loaded = py::isinstance<ios::Schedule>(schedule)
                                       ? schedule.cast<ios::Schedule>()
                                       : ios::Schedule::load(fspath(schedule));
      py::gil_scoped_release release;
      engine_ = std::make_shared<ios::Engine>(path, loaded, options);
    }
  }

  static std::string fspath(const py::object& path) {
    return py::module_::import("os").attr("fspath")(path).cast<std::string>();
  }

  std::shared_ptr<Context> create_context() {
    std::unique_ptr<ios::ExecutionContext> context;
    {
      py::gil_scoped_release release;
      context = engine_->create_context();
    }
    return std::make_shared<Context>(engine_, std::move(context));
  }

  Context& thread_context() {
    const std::thread::id me = std::this_thread::get_id();
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = contexts_.find(me); it != contexts_.end()) return *it->second;
    }
    std::shared_ptr<Context> made = create_context();
    const std::lock_guard<std::mutex> lock(mutex_);
    return *contexts_.emplace(me, std::move(made)).first->second;
  }

  const ios::Engine& engine() const { return *engine_; }

 private:
  std::shared_ptr<ios::Engine> engine_;
  std::mutex mutex_;
  std::map<std::thread::id, std::shared_ptr<Context>> contexts_;
};

// How to get a usable object of each class, for the message below.
template <typename T>
const char* how_to_make();
template <>
const char* how_to_make<ios::Schedule>() {
  return "get one from ios.optimize(), ios.Schedule.load() or ios.Schedule.from_json()";
}
template <>
const char* how_to_make<PyEngine>() {
  return "create one with ios.Engine(model, schedule)";
}
template <>
const char* how_to_make<Context>() {
  return "get one from engine.create_context()";
}

// The C++ object behind `self`. An object made with T.__new__(T) and never
// initialized has none: pybind11
// would hand the method uninitialized memory, which crashed the interpreter
// or blocked forever on a mutex of garbage. Every method of the module's
// classes takes its self through this check.
template <typename T>
T& self_of(py::handle self) {
  const py::detail::type_info* type = py::detail::get_type_info(typeid(T));
  if (!py::isinstance<T>(self)) {
    throw py::type_error(
        "expected an ios." +
        std::string(py::str(py::handle(reinterpret_cast<PyObject*>(type->type)).attr("__name__"))) +
        ", got " + std::string(py::str(self.get_type().attr("__name__"))));
  }
  const py::detail::value_and_holder v_h =
      reinterpret_cast<py::detail::instance*>(self.ptr())->get_value_and_holder(type, false);
  if (!v_h || !v_h.holder_constructed()) {
    const std::string name =
        py::str(py::handle(reinterpret_cast<PyObject*>(type->type)).attr("__name__"));
    throw py::type_error("this ios." + name + " was never initialized (made with ios." + name +
                         ".__new__ and no __init__); " + how_to_make<T>());
  }
  return *v_h.template value_ptr<T>();
}

// A method or property of T, f(T&, args...), bound as one whose self is
// checked by self_of first.
template <typename T, typename R, typename... Args>
auto checked(R (*f)(T&, Args...)) {
  using Self = std::remove_const_t<T>;
  return [f](py::handle self, Args... args) -> R {
    return f(self_of<Self>(self), std::forward<Args>(args)...);
  };
}
template <typename T, typename R>
auto checked(R (T::*f)() const) {
  return [f](py::handle self) -> R { return (self_of<T>(self).*f)(); };
}

py::dict prediction(const ios::Prediction& p) {
  py::dict d;
  d["latency_ms"] = p.latency_ms;
  d["device"] = p.device;
  d["note"] = p.note;
  return d;
}

py::dict describe(const ios::TensorDesc& t) {
  py::dict d;
  d["name"] = t.name;
  d["shape"] = py::tuple(py::cast(t.shape));
  d["dtype"] = ios::to_string(t.type);
  return d;
}

}  // namespace

PYBIND11_MODULE(ios, m) {
  m.doc() =
      "ios: inter-operator scheduling for CNN inference (optimize a model, run it with its "
      "schedule)";

  // ios.Error and its kinds, as the C++ API throws them; the messages are
  // the programs' own.
  static py::exception<ios::Error> error(m, "Error");
  py::register_exception<ios::UserError>(m, "UserError", error.ptr());
  py::register_exception<ios::InternalError>(m, "InternalError", error.ptr());
  py::register_exception<ios::NoDeviceError>(m, "NoDeviceError", error.ptr());
  // The GPU's failures carry what the C++ exceptions do: `sticky` (the
  // process's CUDA context is lost) and, for OutOfMemoryError, `bytes`.
  // Registered last, so tried first (pybind11 tries translators newest first).
  static py::exception<ios::DeviceError> device_error(m, "DeviceError", error.ptr());
  static py::exception<ios::OutOfMemoryError> out_of_memory(m, "OutOfMemoryError",
                                                            device_error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    auto raise = [](const py::object& type, const ios::DeviceError& e) {
      py::object instance = type(e.what());
      instance.attr("sticky") = e.sticky();
      if (const auto* oom = dynamic_cast<const ios::OutOfMemoryError*>(&e))
        instance.attr("bytes") = oom->bytes();
      PyErr_SetObject(type.ptr(), instance.ptr());
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ios::OutOfMemoryError& e) {
      raise(out_of_memory, e);
    } catch (const ios::DeviceError& e) {
      raise(device_error, e);
    }
  });

  py::class_<ios::Schedule>(m, "Schedule", "a schedule: what ios-optimize writes and ios-run reads")
      .def_static(
          "load",
          [](const py::object& path) { return ios::Schedule::load(PyEngine::fspath(path)); },
          py::arg("path"), "read a schedule file")
      .def_static("from_json", &ios::Schedule::from_json, py::arg("text"),
                  py::arg("source") = "<schedule>")
      .def("save", checked(+[](const ios::Schedule& s, const py::object& path, bool force) {
             s.save(PyEngine::fspath(path), force);
           }),
           py::arg("path"), py::kw_only(), py::arg("force") = false,
           "write the schedule file (atomically); an existing file that is not an ios schedule "
           "is replaced only with force=True, as ios-optimize -o replaces it only with --force")
      .def_property_readonly("json", checked(&ios::Schedule::json))
      .def_property_readonly("scheduler", checked(&ios::Schedule::scheduler))
      .def_property_readonly("predicted_latency_ms", checked(&ios::Schedule::predicted_latency_ms))
      .def_property_readonly("batch", checked(&ios::Schedule::batch))
      .def_property_readonly("launch", checked(&ios::Schedule::launch))
      .def_property_readonly("precision", checked(&ios::Schedule::precision))
      .def_property_readonly("staged", checked(&ios::Schedule::staged))
      .def_property_readonly("stages", checked(+[](const ios::Schedule& s) {
                               py::list stages;
                               for (const ios::ScheduleStage& stage : s.stages()) {
                                 py::dict d;
                                 d["strategy"] = stage.strategy;
                                 d["groups"] = py::cast(stage.groups);
                                 stages.append(d);
                               }
                               return stages;
                             }))
      .def_property_readonly("peak_memory_bytes", checked(&ios::Schedule::peak_memory_bytes))
      .def_property_readonly("report", checked(&ios::Schedule::report))
      .def_property_readonly("report_json", checked(&ios::Schedule::report_json))
      .def("__repr__", checked(+[](const ios::Schedule& s) {
             return "<ios.Schedule " + s.scheduler() + ", batch " + std::to_string(s.batch()) +
                    ", " +
                    (s.staged() ? std::to_string(s.stages().size()) + " stages"
                                : std::string("streamed")) +
                    ", predicted " + std::to_string(s.predicted_latency_ms()) + " ms>";
           }));

  m.def(
      "optimize",
      [](const py::object& model, int64_t batch, const std::string& scheduler,
         const std::string& params, const std::string& cost,
         const std::optional<std::string>& device_profile, const std::optional<double>& time_limit,
         const std::vector<std::string>& input_shapes, bool rewrite_batch,
         const std::string& profile_db, const std::string& profile_budget,
         const std::string& precision, int max_block_units, double max_block_bound, int threads,
         const std::string& form, const std::string& launch, const py::object& memory_limit,
         int max_streams, const std::vector<std::string>& keep_fp32, bool half_io,
         const std::string& conv_kernels) {
        ios::OptimizeOptions o;
        o.batch = batch;
        o.scheduler = scheduler;
        o.scheduler_params = params;
        o.cost = cost;
        o.device_profile = device_profile;
        o.time_limit_s = time_limit;
        o.input_shapes = input_shapes;
        o.rewrite_batch = rewrite_batch;
        o.profile_db = profile_db;
        o.conv_kernels = conv_kernels;
        o.profile_budget = profile_budget;
        o.precision = precision;
        o.keep_fp32 = keep_fp32;
        o.half_io = half_io;
        o.max_block_units = max_block_units;
        o.max_block_bound = max_block_bound;
        o.threads = threads;
        o.form = form;
        o.launch = launch;
        // Bytes as an int, or the command line's text ("512MiB").
        if (!memory_limit.is_none()) o.memory_limit = py::str(memory_limit).cast<std::string>();
        o.max_streams = max_streams;
        const std::string path = PyEngine::fspath(model);
        py::gil_scoped_release release;
        return ios::Schedule::optimize(path, o);
      },
      py::arg("model"), py::kw_only(), py::arg("batch") = 0, py::arg("scheduler") = "ios",
      py::arg("params") = "", py::arg("cost") = "auto", py::arg("device_profile") = py::none(),
      py::arg("time_limit") = py::none(), py::arg("input_shapes") = std::vector<std::string>{},
      py::arg("rewrite_batch") = false, py::arg("profile_db") = "", py::arg("profile_budget") = "",
      py::arg("precision") = "", py::arg("max_block_units") = 40, py::arg("max_block_bound") = 9.0,
      py::arg("threads") = 0, py::arg("form") = "staged", py::arg("launch") = "graph",
      py::arg("memory_limit") = py::none(), py::arg("max_streams") = 0,
      py::arg("keep_fp32") = std::vector<std::string>{}, py::arg("half_io") = false,
      py::arg("conv_kernels") = "",
      "ios-optimize MODEL as a call; returns the Schedule (writes no file)");

  py::class_<Context, std::shared_ptr<Context>>(m, "Context",
                                                "one thread's execution context of an Engine")
      .def("__call__", checked(+[](Context& c, const py::args& args, const py::kwargs& kwargs) {
             return c.call(args, kwargs);
           }),
           "run once: one tensor, a dict {name: tensor} or name=tensor keywords; returns the "
           "output (a dict by name for several), of the inputs' kind")
      .def("predict", checked(+[](Context& c) { return prediction(c.predict()); }));

  py::class_<PyEngine>(m, "Engine",
                       "a model and a schedule, validated against each other, ready to run")
      .def(py::init([](const py::object& model, const py::object& schedule,
                       const std::string& backend, int64_t batch,
                       const std::vector<std::string>& input_shapes, bool rewrite_batch, bool force,
                       bool retarget, const std::string& launch, const std::string& precision,
                       int threads, const std::string& device_profile,
                       const std::string& conv_kernels, const std::string& plan_cache, int device) {
             ios::EngineOptions o;
             o.backend = backend;
             o.batch = batch;
             o.input_shapes = input_shapes;
             o.rewrite_batch = rewrite_batch;
             o.force = force;
             o.retarget = retarget;
             o.launch = launch;
             o.precision = precision;
             o.threads = threads;
             o.device_profile = device_profile;
             o.conv_kernels = conv_kernels;
             o.plan_cache = plan_cache;
             o.device = device;
             return std::make_unique<PyEngine>(model, schedule, o);
           }),
           py::arg("model"), py::arg("schedule") = py::none(), py::kw_only(),
           py::arg("backend") = "cpu", py::arg("batch") = 0,
           py::arg("input_shapes") = std::vector<std::string>{}, py::arg("rewrite_batch") = false,
           py::arg("force") = false, py::arg("retarget") = false, py::arg("launch") = "",
           py::arg("precision") = "", py::arg("threads") = 0, py::arg("device_profile") = "",
           py::arg("conv_kernels") = "", py::arg("plan_cache") = "", py::arg("device") = 0)
      .def("__call__", checked(+[](PyEngine& e, const py::args& args, const py::kwargs& kwargs) {
             return e.thread_context().call(args, kwargs);
           }),
           "run once on the calling thread's own context: one tensor, a dict {name: tensor} or "
           "name=tensor keywords (numpy arrays or DLPack tensors); returns the output (a dict by "
           "name for several), of the inputs' kind")
      .def("predict",
           checked(+[](PyEngine& e) { return prediction(e.thread_context().predict()); }))
      .def("create_context", checked(+[](PyEngine& e) { return e.create_context(); }),
           "a context of its own (for one thread at a time), callable as the engine is")
      .def_property_readonly("inputs", checked(+[](const PyEngine& e) {
                               py::list l;
                               for (const auto& t : e.engine().inputs()) l.append(describe(t));
                               return l;
                             }))
      .def_property_readonly("outputs", checked(+[](const PyEngine& e) {
                               py::list l;
                               for (const auto& t : e.engine().outputs()) l.append(describe(t));
                               return l;
                             }))
      .def_property_readonly("backend",
                             checked(+[](const PyEngine& e) { return e.engine().backend(); }))
      .def_property_readonly("device_memory_size", checked(+[](const PyEngine& e) {
                               return e.engine().device_memory_size();
                             }));
}
