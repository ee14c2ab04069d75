// The extension of the Python package `ios` (pybind11, built as ios._ios;
// python/ios/__init__.py exports its names): ios.optimize(), ios.Schedule
// and ios.Engine over the public C++ API (include/ios/engine.h), taking
// numpy arrays and any DLPack tensor (torch's, CuPy's) and returning
// tensors of the kind it was given. Reference: docs/api.md ("Python").
#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ios/engine.h"

namespace py = pybind11;

namespace {

// What kind of object a caller's tensor was, which the outputs follow:
// numpy arrays give numpy arrays, torch tensors torch tensors and CuPy
// arrays CuPy arrays (on the same device); other DLPack producers on the
// CPU get numpy arrays.
enum class Kind { kNumpy, kTorch, kCupy, kOther };

// A DLPack device: the (type, id) pair of __dlpack_device__() and of a
// DLTensor.
struct Place {
  int type = kDLCPU;
  int id = 0;
  bool on_cuda() const { return type == kDLCUDA; }
  // Pinned host memory (kDLCUDAHost) is host memory to the CPU.
  bool on_host() const { return type == kDLCPU || type == kDLCUDAHost; }
  bool operator==(const Place& other) const { return type == other.type && id == other.id; }
};

std::string place_text(const Place& p) {
  if (p.type == kDLCPU) return "cpu";
  if (p.type == kDLCUDAHost) return "cpu (CUDA pinned memory)";
  if (p.type == kDLCUDA) return "cuda:" + std::to_string(p.id);
  return "a device of DLPack type " + std::to_string(p.type);
}

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

// The first line of the Python error now being handled.
std::string first_line(const py::error_already_set& e) {
  std::string text = py::str(e.value());
  if (const size_t end = text.find('\n'); end != std::string::npos) text.resize(end);
  return std::string(py::str(e.type().attr("__name__"))) + ": " + text;
}

// One input tensor as a view of the caller's memory, kept alive (and, for
// DLPack, released to its producer) by this object. Made in two steps: the
// constructor finds the tensor's device without exporting it, export()
// then calls the producer's __dlpack__ with the stream the engine will run
// on, which is known only once every input's device is (the DLPack
// protocol: __dlpack_device__ first, then __dlpack__(stream=...)). numpy
// arrays, DLPack capsules and producers without __dlpack_device__ are read
// by the constructor.
class Input {
 public:
  // `expected`: the model's input of that name, whose shape is checked
  // before anything is copied.
  Input(const std::string& name, const py::object& value, const ios::TensorDesc& expected)
      : name_(name), expected_(&expected) {
    try {
      if (py::isinstance<py::array>(value)) {
        from_numpy(py::reinterpret_borrow<py::array>(value));
      } else if (py::isinstance<py::capsule>(value)) {
        object_ = value;
        kind_ = Kind::kOther;
        consume(value);
      } else if (py::hasattr(value, "__dlpack__")) {
        probe(value);
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

  // The producer's __dlpack__(stream=stream): None for a tensor in host
  // memory (the only value DLPack allows there), for a CUDA tensor the
  // stream the engine runs on (DLPack's integer: 1 for the legacy default
  // stream, else the cudaStream_t), on which the producer makes its pending
  // work on the tensor visible.
  void export_tensor(const py::object& stream) {
    py::object exported;
    try {
      exported = object_.attr("__dlpack__")(py::arg("stream") = stream);
    } catch (py::error_already_set& e) {
      throw dlpack_failed(e);
    }
    consume(exported);
  }

  const std::string& name() const { return name_; }
  bool exported() const { return exported_; }
  const Place& place() const { return place_; }
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
  void check_shape(const std::vector<int64_t>& shape) const {
    if (shape != expected_->shape) {
      throw ios::UserError("input '" + name_ + "' has shape " + shape_text(shape) +
                           " but the model needs " + shape_text(expected_->shape));
    }
  }

  void from_numpy(py::array array) {
    if (!array.dtype().is(py::dtype::of<float>())) {
      throw ios::UserError("input '" + name_ + "' has element type " +
                           std::string(py::str(array.dtype())) + " but the model needs float32");
    }
    check_shape(std::vector<int64_t>(array.shape(), array.shape() + array.ndim()));
    // Row-major, copied only where the caller's array is not. The converting
    // constructor keeps numpy's error (array_t::ensure clears it, which left
    // pybind11 an error_already_set with no error to raise).
    try {
      array_ = py::array_t<float, py::array::c_style>(array);
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_MemoryError)) throw;
      int64_t bytes = static_cast<int64_t>(sizeof(float));
      for (int64_t d : expected_->shape) bytes *= d;
      const std::string message =
          "input '" + name_ + "' (shape " + shape_text(expected_->shape) +
          ") is not a row-major (C-contiguous) array, and its row-major copy of " +
          std::to_string(bytes) + " bytes could not be allocated: not enough memory";
      PyErr_SetString(PyExc_MemoryError, message.c_str());
      throw py::error_already_set();
    }
    kind_ = Kind::kNumpy;
    object_ = array_;
    exported_ = true;
    view_.data = const_cast<float*>(array_.data());
    view_.shape.assign(array_.shape(), array_.shape() + array_.ndim());
    view_.device = ios::DeviceKind::kCpu;
  }

  // torch tensors that DLPack cannot export, refused with what to pass
  // instead before torch raises its own RuntimeError.
  void check_torch_tensor(const py::object& value) const {
    const std::string layout = py::str(py::getattr(value, "layout", py::str("torch.strided")));
    if (layout != "torch.strided") {
      throw ios::UserError("input '" + name_ + "' is a tensor of layout " + layout +
                           " (sparse); pass tensor.to_dense()");
    }
    if (py::getattr(value, "is_meta", py::bool_(false)).cast<bool>()) {
      throw ios::UserError("input '" + name_ +
                           "' is on torch's meta device, which holds no data; pass a tensor "
                           "with data (on the CPU or a CUDA device)");
    }
    if (py::getattr(value, "requires_grad", py::bool_(false)).cast<bool>()) {
      throw ios::UserError("input '" + name_ +
                           "' requires grad (it is part of autograd's graph); pass "
                           "tensor.detach()");
    }
  }

  // Any producer's refusal (a tensor DLPack cannot describe) is the input's
  // fault: one line naming it, not the producer's own exception.
  ios::UserError dlpack_failed(const py::error_already_set& e) const {
    return ios::UserError("input '" + name_ + "': its __dlpack__() failed (" + first_line(e) +
                          "); pass a dense float32 tensor or a numpy array");
  }

  // A producer's kind and device, without exporting the tensor.
  void probe(const py::object& value) {
    object_ = value;
    // By class, subclasses included; a library that is not imported made
    // no tensor of its own.
    const py::dict modules = py::module_::import("sys").attr("modules");
    const auto is_a = [&](const char* module, const char* name) {
      if (!modules.contains(module)) return false;
      const py::object type = py::getattr(modules[module], name, py::none());
      return py::isinstance<py::type>(type) && py::isinstance(value, type);
    };
    kind_ = is_a("torch", "Tensor")   ? Kind::kTorch
            : is_a("cupy", "ndarray") ? Kind::kCupy
                                      : Kind::kOther;
    if (kind_ == Kind::kTorch) check_torch_tensor(value);
    if (!py::hasattr(value, "__dlpack_device__")) {
      // A producer older than the stream protocol takes no stream: its
      // tensor is exported as it is.
      py::object exported;
      try {
        exported = value.attr("__dlpack__")();
      } catch (py::error_already_set& e) {
        throw dlpack_failed(e);
      }
      consume(exported);
      return;
    }
    py::object device;
    try {
      device = value.attr("__dlpack_device__")();
    } catch (py::error_already_set& e) {
      throw ios::UserError("input '" + name_ + "': its __dlpack_device__() failed (" +
                           first_line(e) + "); pass a dense float32 tensor or a numpy array");
    }
    try {
      const auto pair = device.cast<py::tuple>();
      if (pair.size() != 2) throw py::cast_error();
      place_.type = py::int_(pair[0]).cast<int>();
      place_.id = py::int_(pair[1]).cast<int>();
      probed_ = true;
    } catch (py::error_already_set&) {
      throw device_pair_error(device);
    } catch (py::cast_error&) {
      throw device_pair_error(device);
    }
  }

  ios::UserError device_pair_error(const py::object& device) const {
    return ios::UserError("input '" + name_ + "': its __dlpack_device__() returned " +
                          std::string(py::repr(device)) + ", not a (device type, device id) pair");
  }

  // Takes the DLPack capsule `exported` over and checks its tensor.
  void consume(const py::object& exported) {
    if (!py::isinstance<py::capsule>(exported)) {
      throw ios::UserError("input '" + name_ + "': its __dlpack__() returned no DLPack capsule");
    }
    const auto capsule = py::reinterpret_borrow<py::capsule>(exported);
    if (std::string(capsule.name() != nullptr ? capsule.name() : "") != "dltensor") {
      throw ios::UserError("input '" + name_ +
                           "': its DLPack capsule was used already; pass the tensor itself");
    }
    managed_ = capsule.get_pointer<DLManagedTensor>();
    // The producer's capsule destructor frees a capsule still named
    // "dltensor"; this object owns it now (the DLPack protocol).
    PyCapsule_SetName(capsule.ptr(), "used_dltensor");
    exported_ = true;
    const DLTensor& t = managed_->dl_tensor;
    const Place got{static_cast<int>(t.device.device_type), static_cast<int>(t.device.device_id)};
    if (probed_ && !(got == place_)) {
      throw ios::UserError("input '" + name_ + "': its __dlpack__() gave a tensor on " +
                           place_text(got) + " but its __dlpack_device__() said " +
                           place_text(place_));
    }
    place_ = got;
    if (t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1) {
      throw ios::UserError("input '" + name_ + "' has element type " + dlpack_type_name(t.dtype) +
                           " but the model needs float32");
    }
    view_.shape.assign(t.shape, t.shape + t.ndim);
    check_shape(view_.shape);
    if (t.strides != nullptr) {
      int64_t dense_stride = 1;
      for (int i = t.ndim - 1; i >= 0; --i) {
        if (t.shape[i] != 1 && t.strides[i] != dense_stride) {
          throw ios::UserError("input '" + name_ + "' (shape " + shape_text(view_.shape) +
                               ") is not contiguous; pass tensor.contiguous()");
        }
        dense_stride *= t.shape[i];
      }
    }
    // A CUDA tensor's data is a device pointer of its GPU, handed to the
    // engine as such (the device is checked against the engine's before
    // the run).
    view_.device = place_.on_cuda() ? ios::DeviceKind::kCuda : ios::DeviceKind::kCpu;
    view_.data = static_cast<char*>(t.data) + t.byte_offset;
  }

  std::string name_;
  const ios::TensorDesc* expected_;
  py::object object_;
  py::array_t<float, py::array::c_style> array_;
  DLManagedTensor* managed_ = nullptr;
  ios::TensorView view_;
  Kind kind_ = Kind::kNumpy;
  Place place_;
  bool probed_ = false;    // place_ given by __dlpack_device__
  bool exported_ = false;  // view_ holds the tensor
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

// The CUDA stream an inference is enqueued on, as a handle and as DLPack's
// stream integer.
struct Stream {
  void* handle = nullptr;  // cudaStream_t; null: the legacy default stream
  int64_t dlpack = 1;      // 1: the legacy default stream, else the handle
};

// A context's runs one at a time, with the GIL released while waiting:
// a context shared by several threads serializes them instead of racing.
class Context {
 public:
  // `live`: a count of contexts this one is part of while it lives (an
  // engine's per-thread contexts), or null.
  Context(std::shared_ptr<ios::Engine> engine, std::unique_ptr<ios::ExecutionContext> context,
          std::shared_ptr<std::atomic<int>> live = nullptr)
      : engine_(std::move(engine)), context_(std::move(context)), live_(std::move(live)) {
    if (live_) ++*live_;
  }
  ~Context() {
    if (live_) --*live_;
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // An engine of several batch sizes: the batch of the first model input as
  // given (its `shape`, read before any export), whose schedule's tensors
  // the call checks against; the first schedule's without one.
  int64_t chosen_batch(const std::map<std::string, py::object>& named) const {
    const std::vector<int64_t> held = engine_->batch_sizes();
    const ios::TensorDesc& first = engine_->inputs().at(0);
    const auto it = named.find(first.name);
    if (held.size() == 1 || it == named.end() || !py::hasattr(it->second, "shape")) return held[0];
    const std::vector<int64_t> shape = it->second.attr("shape").cast<std::vector<int64_t>>();
    const int64_t batch = shape.empty() ? -1 : shape[0];
    if (std::find(held.begin(), held.end(), batch) != held.end()) return batch;
    std::string sizes, text;
    for (int64_t b : held) sizes += (sizes.empty() ? "" : ", ") + std::to_string(b);
    for (int64_t d : shape) text += (text.empty() ? "" : "x") + std::to_string(d);
    throw ios::UserError("input '" + first.name + "' has batch " + std::to_string(batch) +
                         " (shape " + text + ") but the engine holds batch sizes " + sizes +
                         "; give one of them, or load the engine with a schedule for batch " +
                         std::to_string(batch) + " too");
  }

  py::object call(const py::args& args, const py::kwargs& kwargs) {
    const std::map<std::string, py::object> named = named_inputs(*engine_, args, kwargs);
    const int64_t batch = engine_->inputs().empty() ? 0 : chosen_batch(named);
    const std::vector<ios::TensorDesc>& model_inputs =
        engine_->inputs().empty() ? engine_->inputs() : engine_->inputs(batch);
    const std::vector<ios::TensorDesc>& model_outputs =
        engine_->inputs().empty() ? engine_->outputs() : engine_->outputs(batch);
    // Every name is checked before any tensor is converted (which may copy):
    // the message is the C++ API's (ExecutionContext::run).
    std::string names;
    for (const auto& t : model_inputs) names += (names.empty() ? "'" : ", '") + t.name + "'";
    std::vector<const ios::TensorDesc*> expected;
    for (const auto& [name, value] : named) {
      const auto& model = model_inputs;
      const auto it = std::find_if(model.begin(), model.end(),
                                   [&](const ios::TensorDesc& t) { return t.name == name; });
      if (it == model.end()) {
        throw ios::UserError("unknown input '" + name + "': the model's inputs are " + names);
      }
      expected.push_back(&*it);
    }
    if (!engine_->computes_outputs()) {
      throw ios::UserError(
          "the " + engine_->backend() +
          " backend computes no outputs; call predict() for its predicted latency");
    }
    std::vector<std::unique_ptr<Input>> held;
    size_t i = 0;
    for (const auto& [name, value] : named) {
      held.push_back(std::make_unique<Input>(name, value, *expected[i++]));
    }
    // Where the inference runs: every input where the engine can read it,
    // all on one device, checked before any producer exports its tensor.
    const Input* cuda_input = nullptr;
    const Input* host_input = nullptr;
    for (const auto& in : held) {
      check_place(*in);
      const Input*& first = in->place().on_cuda() ? cuda_input : host_input;
      if (first == nullptr) first = in.get();
    }
    if (cuda_input != nullptr && host_input != nullptr) {
      throw ios::UserError("input '" + host_input->name() + "' is on " +
                           place_text(host_input->place()) + " but input '" + cuda_input->name() +
                           "' is on " + place_text(cuda_input->place()) +
                           "; give every input on the same device");
    }
    const bool on_gpu = cuda_input != nullptr;
    const Stream stream = on_gpu ? caller_stream(*cuda_input) : Stream{};
    for (const auto& in : held) {
      if (in->exported()) continue;
      in->export_tensor(on_gpu ? py::object(py::int_(stream.dlpack)) : py::object(py::none()));
      check_place(*in);
    }
    ios::TensorViewMap inputs;
    for (const auto& in : held) inputs[in->name()] = in->view();

    // Outputs allocated as the caller's kind, on the inputs' device,
    // written in place.
    const Kind kind = held.empty() ? Kind::kNumpy : held.front()->kind();
    py::dict results;
    ios::TensorViewMap outputs;
    for (const ios::TensorDesc& t : model_outputs) {
      auto [out, data] = allocate(t, kind, on_gpu, engine_->device());
      outputs[t.name] = ios::TensorView{data, t.shape, ios::DataType::kFloat32,
                                        on_gpu ? ios::DeviceKind::kCuda : ios::DeviceKind::kCpu};
      results[py::str(t.name)] = out;
    }
    if (on_gpu) {
      py::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(mutex_);
      context_->enqueue(inputs, outputs, stream.handle);
    } else {
      py::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(mutex_);
      context_->run(inputs, outputs);
    }
    if (model_outputs.size() == 1) return results[py::str(model_outputs[0].name)];
    return results;
  }

  ios::Prediction predict() {
    py::gil_scoped_release release;
    const std::lock_guard<std::mutex> lock(mutex_);
    return context_->predict();
  }

 private:
  // An input's device against the engine's: host memory for any backend
  // (the cuda backend copies it in and out), CUDA memory of the engine's
  // GPU for the cuda backend.
  void check_place(const Input& in) const {
    const Place& p = in.place();
    if (!p.on_host() && !p.on_cuda()) {
      throw ios::UserError("input '" + in.name() + "' is on " + place_text(p) +
                           "; ios runs on the CPU and on CUDA devices");
    }
    if (p.on_cuda() && engine_->backend() != "cuda") {
      throw ios::UserError("input '" + in.name() + "' is on " + place_text(p) +
                           " but the engine runs on the " + engine_->backend() +
                           " backend; pass CPU tensors (tensor.cpu()) or create the engine with "
                           "backend=\"cuda\"");
    }
    const Place engine_device{kDLCUDA, engine_->device()};
    if (p.on_cuda() && !(p == engine_device)) {
      throw ios::UserError("input '" + in.name() + "' is on " + place_text(p) +
                           " but the engine runs on " + place_text(engine_device) +
                           "; pass tensors on " + place_text(engine_device) + " (tensor.to(\"" +
                           place_text(engine_device) + "\"))");
    }
  }

  // The stream of the producer of `in` (a CUDA tensor): torch's or CuPy's
  // current stream on its device, so that the inference is ordered with
  // the caller's other work there without a synchronization. Other
  // producers' outputs could not be made: refused.
  static Stream caller_stream(const Input& in) {
    uintptr_t handle = 0;
    if (in.kind() == Kind::kTorch) {
      const py::module_ torch = py::module_::import("torch");
      const py::object device = torch.attr("device")("cuda", in.place().id);
      handle =
          torch.attr("cuda").attr("current_stream")(device).attr("cuda_stream").cast<uintptr_t>();
    } else if (in.kind() == Kind::kCupy) {
      const py::module_ cupy = py::module_::import("cupy");
      handle =
          cupy.attr("cuda").attr("get_current_stream")(in.place().id).attr("ptr").cast<uintptr_t>();
    } else {
      throw ios::UserError(
          "input '" + in.name() + "' is a CUDA tensor of type " +
          std::string(py::str(in.object().get_type().attr("__name__"))) +
          ": ios gives CUDA outputs as torch or CuPy tensors; pass torch.from_dlpack(x) or "
          "cupy.from_dlpack(x) (no copy)");
    }
    // DLPack's integer for the legacy default stream (handle 0) is 1: 0 is
    // not allowed there.
    return Stream{reinterpret_cast<void*>(handle), handle == 0 ? 1 : static_cast<int64_t>(handle)};
  }

  // One output of `kind` on the host or on the engine's GPU: the object
  // returned and the memory the engine writes.
  static std::pair<py::object, void*> allocate(const ios::TensorDesc& t, Kind kind, bool on_gpu,
                                               int device_id) {
    if (kind == Kind::kTorch) {
      const py::module_ torch = py::module_::import("torch");
      const py::object device =
          on_gpu ? torch.attr("device")("cuda", device_id) : torch.attr("device")("cpu");
      py::object out = torch.attr("empty")(
          py::cast(t.shape), py::arg("dtype") = torch.attr("float32"), py::arg("device") = device);
      return {out, reinterpret_cast<void*>(out.attr("data_ptr")().cast<uintptr_t>())};
    }
    if (on_gpu) {  // CuPy: caller_stream refused every other kind
      const py::module_ cupy = py::module_::import("cupy");
      const py::object device = cupy.attr("cuda").attr("Device")(device_id);
      device.attr("__enter__")();
      py::object out;
      try {
        out = cupy.attr("empty")(py::cast(t.shape), py::arg("dtype") = cupy.attr("float32"));
      } catch (...) {
        device.attr("__exit__")(py::none(), py::none(), py::none());
        throw;
      }
      device.attr("__exit__")(py::none(), py::none(), py::none());
      return {out, reinterpret_cast<void*>(out.attr("data").attr("ptr").cast<uintptr_t>())};
    }
    py::array_t<float, py::array::c_style> array(t.shape);
    void* data = array.mutable_data();
    return {std::move(array), data};
  }

  std::shared_ptr<ios::Engine> engine_;
  std::unique_ptr<ios::ExecutionContext> context_;
  std::shared_ptr<std::atomic<int>> live_;
  std::mutex mutex_;
};

// ios.Engine: the C++ engine and, for engine(x), a context of the calling
// thread's own, made on its first call and kept in a threading.local, so
// that it is released when its thread ends (or with the engine).
class PyEngine {
 public:
  PyEngine(const py::object& model, const py::object& schedule, ios::EngineOptions options)
      : thread_local_(py::module_::import("threading").attr("local")()),
        thread_contexts_(std::make_shared<std::atomic<int>>(0)) {
    const std::string path = fspath(model);
    if (schedule.is_none()) {
      py::gil_scoped_release release;
      engine_ = std::make_shared<ios::Engine>(path, options);
    } else if (py::isinstance<py::list>(schedule) || py::isinstance<py::tuple>(schedule)) {
      // One schedule per batch size (Schedule objects or files).
      std::vector<ios::Schedule> loaded;
      for (const py::handle item : schedule) {
        loaded.push_back(py::isinstance<ios::Schedule>(item)
                             ? item.cast<ios::Schedule>()
                             : ios::Schedule::load(fspath(py::reinterpret_borrow<py::object>(item))));
      }
      py::gil_scoped_release release;
      engine_ = std::make_shared<ios::Engine>(path, loaded, options);
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

  std::shared_ptr<Context> create_context(std::shared_ptr<std::atomic<int>> live = nullptr) {
    std::unique_ptr<ios::ExecutionContext> context;
    {
      py::gil_scoped_release release;
      context = engine_->create_context();
    }
    return std::make_shared<Context>(engine_, std::move(context), std::move(live));
  }

  // The calling thread's context. The threading.local holds it: Python
  // drops a thread's values when the thread ends, so no context outlives
  // its thread (a map by thread id kept every one until the engine went).
  std::shared_ptr<Context> thread_context() {
    py::object mine = py::getattr(thread_local_, "context", py::none());
    if (mine.is_none()) {
      mine = py::cast(create_context(thread_contexts_));
      py::setattr(thread_local_, "context", mine);
    }
    return mine.cast<std::shared_ptr<Context>>();
  }

  // How many threads hold a context of this engine now.
  int thread_contexts() const { return thread_contexts_->load(); }

  const ios::Engine& engine() const { return *engine_; }

 private:
  std::shared_ptr<ios::Engine> engine_;
  py::object thread_local_;
  std::shared_ptr<std::atomic<int>> thread_contexts_;
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

// Built as ios._ios: the package ios (python/ios/__init__.py) exports
// these names with its own, pure-Python ones (ios.compile).
PYBIND11_MODULE(_ios, m) {
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
             return e.thread_context()->call(args, kwargs);
           }),
           "run once on the calling thread's own context: one tensor, a dict {name: tensor} or "
           "name=tensor keywords (numpy arrays or DLPack tensors); returns the output (a dict by "
           "name for several), of the inputs' kind")
      .def("predict",
           checked(+[](PyEngine& e) { return prediction(e.thread_context()->predict()); }))
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
      .def_property_readonly("batch_sizes",
                             checked(+[](const PyEngine& e) { return e.engine().batch_sizes(); }),
                             "the batch of each schedule, in the order given")
      .def_property_readonly(
          "allocations",
          checked(+[](const PyEngine& e) {
            const ios::Allocations a = e.engine().allocations();
            py::dict d;
            auto entry = [](const ios::AllocationCount& c) {
              py::dict x;
              x["allocations"] = c.allocations;
              x["bytes"] = c.bytes;
              return x;
            };
            d["weights"] = entry(a.weights);
            d["activations"] = entry(a.activations);
            d["workspaces"] = entry(a.workspaces);
            return d;
          }),
          "what the engine and its living contexts hold now, by kind: "
          "{kind: {'allocations': n, 'bytes': b}}")
      .def_property_readonly("device_memory_size", checked(+[](const PyEngine& e) {
                               return e.engine().device_memory_size();
                             }))
      .def_property_readonly("thread_contexts", checked(&PyEngine::thread_contexts),
                             "how many threads hold a context of this engine now (made by "
                             "engine(x) on a thread's first call, released when the thread ends)");
}
