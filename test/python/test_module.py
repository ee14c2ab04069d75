"""The Python module ios (python/ios_module.cpp) on the CPU backend: numpy
arrays and torch tensors in and out, the outputs those of `ios-run --backend
cpu` on the same input and within float32's rounding of a float64 PyTorch
truth, different for different inputs; wrong shapes, element types, devices,
missing or extra inputs and a schedule for another model each a clear
ios.UserError; several threads, one context each, identical outputs;
nothing written to standard output. Hostile use (issue 53): objects made
with __new__ and never initialized (in a subprocess with a timeout, as a
crash or a hang there must not end or stop this run), a wrong-shape
broadcast view refused before it is copied, an input whose copy cannot be
allocated, torch tensors DLPack cannot export, save() over a file that is
not a schedule, and options that would do nothing. DLPack producers (issue
54): __dlpack_device__ first, then __dlpack__(stream=None) on the CPU (a
producer from before the protocol called as it expects), a tensor on
another device refused before it is exported, naming the input and both
devices; 8 threads x 100 calls on one engine and on one shared context,
every output the one-thread output of its input; engine(x)'s per-thread
contexts released with their threads. The CUDA backend's tests (marked
`cuda`: torch CUDA tensors on the caller's stream, the stream given to
__dlpack__, cuda:1 and producers whose outputs ios cannot make refused,
inputs on one device, CuPy, 8 threads) run as their own ctest entry,
"python: module on CUDA", skipped without CUDA.

Run by ctest ("python: module", `-m "not cuda"`) with PYTHONPATH=build/python,
IOS_MODELS_DIR and IOS_BIN set, or by hand:
    PYTHONPATH=build/python IOS_MODELS_DIR=onnx_models/generated IOS_BIN=build/apps \
        /usr/bin/python3 -m pytest test/python
"""

import ctypes
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import tracemalloc

import numpy as np
import pytest
import torch

import ios

MODELS = os.environ.get("IOS_MODELS_DIR", os.path.join(os.path.dirname(__file__), "../../onnx_models/generated"))
MODEL = os.path.join(MODELS, "squeezenet1_1-bdyn.onnx")
OTHER_MODEL = os.path.join(MODELS, "vit_style.onnx")
# A model with its own input and float64 truth (onnx_models/export_models.py --truth):
# PyTorch's float64 run of the same weights, independent of ios.
TRUTH_STEM = os.path.join(MODELS, "squeezenet1_1-64x64")
# ios-run, beside the module's build folder unless IOS_BIN names it.
# ios.__file__ is build/python/ios/__init__.py in the build tree.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(ios.__file__)))
IOS_BIN = os.environ.get("IOS_BIN") or os.path.join(os.path.dirname(PACKAGE_DIR), "apps")


@pytest.fixture(scope="module")
def schedule():
    return ios.optimize(MODEL, batch=1, cost="simulated")


@pytest.fixture(scope="module")
def engine(schedule):
    return ios.Engine(MODEL, schedule)


@pytest.fixture(scope="module")
def x(engine):
    shape = engine.inputs[0]["shape"]
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


@pytest.fixture(scope="module")
def y(engine, x):
    return engine(x)


@pytest.fixture(scope="module")
def ios_run_cpu(schedule, tmp_path_factory):
    """ios-run --backend cpu on MODEL and the schedule with a given input:
    the same executor through the command line, not the module."""
    folder = tmp_path_factory.mktemp("ios-run")
    schedule_file = folder / "schedule.json"
    schedule.save(schedule_file)

    def run(x, tag):
        np.save(folder / f"{tag}.npy", x)
        out = folder / tag
        subprocess.run([os.path.join(IOS_BIN, "ios-run"), MODEL, str(schedule_file), "--backend", "cpu",
                        "--input", f"input={folder / tag}.npy", "--output-dir", str(out),
                        "--iterations", "1", "--warmup", "0", "--quiet"], check=True)
        files = sorted(out.glob("*.npy"))
        assert len(files) == 1, files
        return np.load(files[0])
    return run


def test_optimize_returns_a_schedule(schedule, tmp_path):
    assert schedule.scheduler == "ios"
    assert schedule.batch == 1
    assert schedule.predicted_latency_ms > 0
    assert schedule.staged and schedule.stages
    assert {s["strategy"] for s in schedule.stages} <= {"concurrent", "merge"}
    assert "Latency" in schedule.report
    path = tmp_path / "squeezenet.schedule.json"
    schedule.save(path)
    loaded = ios.Schedule.load(path)
    assert loaded.stages == schedule.stages
    assert loaded.predicted_latency_ms == schedule.predicted_latency_ms
    assert loaded.report == ""  # only a search has one


def test_several_batch_sizes(schedule, x, y):
    """One engine of the schedules for batch 1 and 2 (a list): each call runs
    the schedule of its input's batch, the weights are held once, and a batch
    the engine does not hold is refused in one line."""
    two = ios.optimize(MODEL, batch=2, cost="simulated", scheduler="sequential")
    engine = ios.Engine(MODEL, [schedule, two])
    assert engine.batch_sizes == [1, 2]
    alone = ios.Engine(MODEL, two)
    # Before any context (the cpu backend counts a merged convolution's
    # assembled weights per context, and `schedule` merges some).
    assert engine.allocations["weights"] == {"allocations": 1, "bytes": alone.allocations["weights"]["bytes"]}
    x2 = np.concatenate([x, x[:, ::-1].copy()])
    np.testing.assert_array_equal(engine(x), y)
    np.testing.assert_array_equal(engine(x2), alone(x2))
    np.testing.assert_array_equal(engine(torch.from_numpy(x2)).numpy(), alone(x2))
    assert engine.allocations["activations"]["allocations"] == 2  # this thread's context, each batch once
    x3 = np.concatenate([x, x, x])
    with pytest.raises(ios.UserError, match=r"^input '.*' has batch 3 \(shape 3x.*\) but the engine holds "
                       r"batch sizes 1, 2; give one of them"):
        engine(x3)


def test_half_precision(x, y):
    """precision, keep_fp32 and half_io reach the conversion; the engine runs
    the original model at the schedule's precision, within float16's
    rounding of the float32 result."""
    half = ios.optimize(MODEL, batch=1, precision="fp16", keep_fp32=["Concat"], time_limit=10)
    assert half.precision == "fp16"
    doc = json.loads(half.json)
    assert doc["precision"]["keep_fp32"] == ["Concat"] and doc["precision"]["source"] == "converted"
    engine = ios.Engine(MODEL, half)
    out = engine(x)
    assert out.dtype == np.float32 and out.shape == y.shape
    assert np.abs(out - y).max() <= 0.05 * np.abs(y).max()
    assert not np.array_equal(out, y)  # rounded, so not the float32 numbers
    with pytest.raises(ios.UserError, match="--retarget"):
        ios.Engine(MODEL, half, precision="bf16")
    assert ios.Engine(MODEL, half, precision="bf16", retarget=True)(x).shape == y.shape
    with pytest.raises(ios.UserError, match="names no node"):
        ios.optimize(MODEL, batch=1, precision="bf16", keep_fp32=["NoSuchNode"])
    with pytest.raises(ios.UserError, match="precision"):
        ios.optimize(MODEL, batch=1, precision="fp8")
    assert ios.optimize(MODEL, batch=1, precision="bf16", half_io=True, time_limit=10).precision == "bf16"


def test_memory_options(schedule):
    assert schedule.peak_memory_bytes > 0
    one_stream = ios.optimize(MODEL, batch=1, cost="simulated", max_streams=1)
    assert all(len(stage["groups"]) == 1 for stage in one_stream.stages)
    assert json.loads(one_stream.json)["scheduler"]["params"]["s"] == "1"  # ios's s lowered to it
    limited = ios.optimize(MODEL, batch=1, cost="simulated", memory_limit=schedule.peak_memory_bytes)
    assert limited.peak_memory_bytes <= schedule.peak_memory_bytes
    assert "Memory limit" in limited.report
    assert ios.optimize(MODEL, batch=1, cost="simulated", memory_limit="1 GiB").peak_memory_bytes <= 1 << 30
    with pytest.raises(ios.UserError, match=r"memory-limit"):
        ios.optimize(MODEL, batch=1, cost="simulated", memory_limit="1KiB")
    with pytest.raises(ios.UserError, match=r"max_streams 2000: expected a value from 1 to 1024"):
        ios.optimize(MODEL, batch=1, cost="simulated", max_streams=2000)


def test_optimize_from_several_threads(schedule):
    def body(s):  # the schedule without its time of writing
        return {k: v for k, v in json.loads(s.json).items() if k != "created"}

    results = [None] * 4
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(
        i, ios.optimize(MODEL, batch=1, cost="simulated"))) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r is not None and body(r) == body(schedule) for r in results)


def test_engine_describes_its_tensors(engine):
    assert engine.backend == "cpu"
    assert [t["name"] for t in engine.inputs] == ["input"]
    assert engine.inputs[0]["shape"] == (1, 3, 224, 224)
    assert engine.outputs[0]["dtype"] == "float32"


def test_numpy_in_numpy_out(engine, x, y):
    assert isinstance(y, np.ndarray)
    assert y.dtype == np.float32
    assert y.shape == engine.outputs[0]["shape"]
    assert np.isfinite(y).all()


def test_outputs_are_ios_runs(x, y, ios_run_cpu):
    """y, which the tests below compare with, is what ios-run computes on x."""
    np.testing.assert_array_equal(y, ios_run_cpu(x, "x"))


def test_different_inputs_give_different_outputs(engine, x, y, ios_run_cpu):
    """Another input gives another output, through every way in: an engine
    that ignored its input would give y each time."""
    x2 = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    y2 = engine(x2)
    np.testing.assert_array_equal(y2, ios_run_cpu(x2, "x2"))
    # Two noise images give SqueezeNet's non-negative scores 4% apart (of the
    # largest); the same input gives them bit for bit (above): 0.1% is far
    # from both.
    assert np.abs(y2 - y).max() > 1e-3 * np.abs(y).max()
    assert np.array_equal(engine(torch.from_numpy(x2)).numpy(), y2)
    assert np.array_equal(engine(input=x2), y2)
    assert np.array_equal(engine.create_context()(x2), y2)
    assert np.array_equal(engine(x), y)  # and back


def test_outputs_match_the_float64_truth():
    """A model's output against PyTorch's float64 run of the same weights on
    the same input (files written by the model export, not by ios). float32
    rounds at 6e-8 relative; through SqueezeNet's 26 convolutions 1e-5 of the
    largest |score| leaves a factor of 50 over ios's error (1.7e-7 of it on
    2026-11-28), while another input's scores are 9e-2 of it away."""
    x = np.load(TRUTH_STEM + ".input.npy")
    truth = np.load(TRUTH_STEM + ".truth.npy")
    schedule = ios.optimize(TRUTH_STEM + ".onnx", cost="simulated")
    out = ios.Engine(TRUTH_STEM + ".onnx", schedule)(x)
    assert out.shape == truth.shape and out.dtype == np.float32
    scale = np.abs(truth).max()
    assert np.abs(out - truth).max() <= 1e-5 * scale
    other = ios.Engine(TRUTH_STEM + ".onnx", schedule)(np.random.default_rng(2).standard_normal(x.shape).astype(np.float32))
    assert np.abs(other - truth).max() > 100 * 1e-5 * scale


def test_torch_in_torch_out(engine, x, y):
    out = engine(torch.from_numpy(x))
    assert isinstance(out, torch.Tensor)
    assert out.dtype == torch.float32 and out.device.type == "cpu"
    assert np.array_equal(out.numpy(), y)


def test_inputs_by_name(engine, x, y):
    assert np.array_equal(engine({"input": x}), y)
    assert np.array_equal(engine(input=x), y)


def test_a_non_contiguous_numpy_array_is_copied(engine, x, y):
    strided = np.asfortranarray(x)
    assert not strided.flags.c_contiguous
    assert np.array_equal(engine(strided), y)


def test_the_sequential_schedule_agrees(x, y):
    sequential = ios.Engine(MODEL, batch=1)  # no schedule: one unit after the other
    np.testing.assert_allclose(sequential(x), y, rtol=1e-4, atol=1e-5)


def test_wrong_shape(engine, x):
    with pytest.raises(ios.UserError, match=r"input 'input' has shape 1x3x224x225 but the model needs 1x3x224x224"):
        engine(np.zeros((1, 3, 224, 225), np.float32))


@pytest.mark.parametrize("value, type_name", [
    (np.zeros((1, 3, 224, 224), np.float64), "float64"),
    (torch.zeros((1, 3, 224, 224), dtype=torch.int64), "int64"),
    (torch.zeros((1, 3, 224, 224), dtype=torch.float16), "float16"),
])
def test_wrong_element_type(engine, value, type_name):
    with pytest.raises(ios.UserError, match=f"input 'input' has element type {type_name} but the model needs float32"):
        engine(value)


def test_missing_and_extra_inputs(engine, x):
    with pytest.raises(ios.UserError, match=r"input 'input' is missing: the model's inputs are 'input'"):
        engine({})
    with pytest.raises(ios.UserError, match=r"unknown input 'extra': the model's inputs are 'input'"):
        engine({"input": x, "extra": x})
    with pytest.raises(TypeError):
        engine(x, x)


def test_not_a_tensor(engine):
    with pytest.raises(ios.UserError, match=r"input 'input' is of type list: give a numpy array or a DLPack tensor"):
        engine([1.0, 2.0])


def test_non_contiguous_torch_tensor(engine, x):
    strided = torch.from_numpy(x).transpose(2, 3).contiguous().transpose(2, 3)
    assert not strided.is_contiguous()
    with pytest.raises(ios.UserError, match=r"is not contiguous; pass tensor.contiguous\(\)"):
        engine(strided)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


def _capsule_on_device(device_type, shape, keep, device_id=0):
    """A DLPack capsule of a float32 tensor said to live on `device_type`
    (2: CUDA, 4: OpenCL): what a GPU framework would hand over, made without one."""
    dims = (ctypes.c_int64 * len(shape))(*shape)
    managed = _DLManagedTensor()
    managed.dl_tensor.data = 0x1000
    managed.dl_tensor.device = _DLDevice(device_type, device_id)
    managed.dl_tensor.ndim = len(shape)
    managed.dl_tensor.dtype = _DLDataType(2, 32, 1)  # kDLFloat, 32 bits
    managed.dl_tensor.shape = dims
    keep += [dims, managed]  # alive while the capsule is used; no deleter
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new_capsule(ctypes.addressof(managed), b"dltensor", None)


def test_wrong_device(engine):
    keep = []
    with pytest.raises(ios.UserError, match=r"^input 'input' is on cuda:0 but the engine runs on the cpu backend; "
                                            r"pass CPU tensors \(tensor.cpu\(\)\) or create the engine with "
                                            r'backend="cuda"$'):
        engine(_capsule_on_device(2, (1, 3, 224, 224), keep))
    with pytest.raises(ios.UserError, match=r"input 'input' is on a device of DLPack type 4"):
        engine(_capsule_on_device(4, (1, 3, 224, 224), keep))


# --- DLPack producers (issue 54) ------------------------------------------------

class _Producer:
    """A DLPack producer other than numpy, torch and CuPy (as JAX's arrays
    are to ios), over a numpy array, that records how it is called. With
    `device`, it has the stream protocol's __dlpack_device__ (a DLPack
    (type, id) pair; `capsule` then replaces what __dlpack__ gives);
    without, it is a producer from before the protocol."""

    def __init__(self, array, device=None, capsule=None):
        self.array, self.device, self.capsule, self.calls = array, device, capsule, []
        if device is not None:
            self.__dlpack_device__ = lambda: self.device

    def __dlpack__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return self.capsule if self.capsule is not None else self.array.__dlpack__()


class _RecordingTensor(torch.Tensor):
    """A torch tensor whose __dlpack__ records the stream it is given."""
    streams = []

    def __dlpack__(self, stream=None):
        _RecordingTensor.streams.append(stream)
        return super().__dlpack__(stream=stream)  # keyword-only in PyTorch 2.x


def test_dlpack_stream_on_the_cpu(engine, x, y):
    """The protocol on the CPU: __dlpack_device__ first, then __dlpack__ with
    stream=None, the only value DLPack allows for a device without streams
    (the old module called __dlpack__() with no stream, whatever the device);
    a producer from before the protocol is called as it expects. Outputs:
    numpy for other producers, torch for a torch tensor (subclasses too)."""
    modern = _Producer(x, device=(1, 0))
    out = engine(modern)
    assert modern.calls == [((), {"stream": None})]
    assert isinstance(out, np.ndarray) and np.array_equal(out, y)
    legacy = _Producer(x)
    assert np.array_equal(engine(legacy), y)
    assert legacy.calls == [((), {})]
    _RecordingTensor.streams.clear()
    out = engine(torch.from_numpy(x).as_subclass(_RecordingTensor))
    assert _RecordingTensor.streams == [None]
    assert isinstance(out, torch.Tensor) and np.array_equal(out.numpy(), y)


def test_the_device_is_checked_before_the_export(engine, x):
    """A tensor on another device is refused from __dlpack_device__, with the
    input and both devices named, before the producer exports it (which
    would synchronize its streams for nothing)."""
    on_gpu1 = _Producer(x, device=(2, 1))
    with pytest.raises(ios.UserError, match=r"^input 'input' is on cuda:1 but the engine runs on the cpu backend"):
        engine(on_gpu1)
    assert on_gpu1.calls == []
    opencl = _Producer(x, device=(4, 0))
    with pytest.raises(ios.UserError, match=r"^input 'input' is on a device of DLPack type 4; ios runs on the CPU "
                                            r"and on CUDA devices$"):
        engine(opencl)
    assert opencl.calls == []


def test_a_producer_that_contradicts_itself(engine, x):
    keep = []
    liar = _Producer(x, device=(1, 0), capsule=_capsule_on_device(2, (1, 3, 224, 224), keep))
    with pytest.raises(ios.UserError, match=r"^input 'input': its __dlpack__\(\) gave a tensor on cuda:0 but its "
                                            r"__dlpack_device__\(\) said cpu$"):
        engine(liar)
    for device in ["cpu", (1,), 12]:
        with pytest.raises(ios.UserError, match=r"^input 'input': its __dlpack_device__\(\) returned .*, not a "
                                                r"\(device type, device id\) pair$"):
            engine(_Producer(x, device=device))


def test_cuda_backend_without_a_gpu(schedule):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ios.NoDeviceError, match=r"^no CUDA device"):
        ios.Engine(MODEL, schedule, backend="cuda")


def test_device_keyword(schedule):
    """device is the CUDA ordinal: refused when negative or with the cpu
    backend, and a device the machine does not have is no GPU."""
    with pytest.raises(ios.UserError, match=r"^device -1: expected a CUDA device ordinal"):
        ios.Engine(MODEL, schedule, device=-1)
    with pytest.raises(ios.UserError, match=r"^device 1: the cpu backend runs on no GPU"):
        ios.Engine(MODEL, schedule, device=1)
    with pytest.raises(ios.NoDeviceError, match=r"^no CUDA device"):
        ios.Engine(MODEL, schedule, backend="cuda", device=1000)


def test_error_kinds():
    """The GPU's failures are their own kinds, not internal errors."""
    assert issubclass(ios.DeviceError, ios.Error)
    assert issubclass(ios.OutOfMemoryError, ios.DeviceError)
    for kind in (ios.UserError, ios.InternalError, ios.NoDeviceError):
        assert not issubclass(ios.DeviceError, kind)


def test_schedule_for_another_model(schedule):
    with pytest.raises(ios.UserError, match=r"the schedule was made for another model"):
        ios.Engine(OTHER_MODEL, schedule)


def test_bad_requests():
    with pytest.raises(ios.UserError, match=r"unknown backend 'tpu'"):
        ios.Engine(MODEL, backend="tpu")
    with pytest.raises(ios.UserError, match=r"no-such"):
        ios.optimize(MODEL, scheduler="no-such")
    with pytest.raises(ios.UserError, match=r"missing\.onnx"):
        ios.optimize("missing.onnx")
    with pytest.raises(ios.UserError, match=r"max_block_units 0: expected a value from 1 to 64"):
        ios.optimize(MODEL, max_block_units=0)
    assert issubclass(ios.UserError, ios.Error) and issubclass(ios.NoDeviceError, ios.Error)


def test_sim_predicts_and_computes_nothing(schedule, x):
    sim = ios.Engine(MODEL, schedule, backend="sim")
    prediction = sim.predict()
    assert prediction["latency_ms"] > 0 and prediction["device"]
    with pytest.raises(ios.UserError, match=r"computes no outputs"):
        sim(x)


def test_nothing_on_standard_output(capfd, x):
    schedule = ios.optimize(MODEL, batch=1, cost="simulated", scheduler="greedy")
    ios.Engine(MODEL, schedule)(x)
    ios.Engine(MODEL, schedule, backend="sim").predict()
    with pytest.raises(ios.UserError):
        ios.Engine(OTHER_MODEL, schedule)
    assert capfd.readouterr().out == ""


def test_threads_one_context_each(engine, x, y):
    results = [None] * 3
    errors = []

    def work(i):
        try:
            # engine(x) uses the calling thread's own context; an explicit
            # one per thread is the same.
            results[i] = engine(x) if i % 2 == 0 else engine.create_context()(x)
        except Exception as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for r in results:
        assert np.array_equal(r, y)


def _branches_model(path):
    """A small CNN whose four branches a schedule runs side by side: 1x8x16x16
    in, Conv 3x3 -> Relu, Conv 1x1 -> Relu, Conv 3x3 -> Conv 3x3, MaxPool 3x3,
    concatenated and mixed by a Conv 1x1 to 1x8x16x16 out. Seeded weights;
    a call takes well under a millisecond, so thousands take seconds."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    weights, nodes = [], []

    def conv(name, src, cin, cout, k, relu=False):
        w = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
        b = (0.1 * rng.standard_normal(cout)).astype(np.float32)
        weights.extend([numpy_helper.from_array(w, name + ".w"), numpy_helper.from_array(b, name + ".b")])
        out = name + ("_pre" if relu else "")
        nodes.append(helper.make_node("Conv", [src, name + ".w", name + ".b"], [out], name=name,
                                      kernel_shape=[k, k], pads=[k // 2] * 4))
        if relu:
            nodes.append(helper.make_node("Relu", [out], [name], name=name + "_relu"))
        return name

    branches = [conv("a", "x", 8, 8, 3, relu=True), conv("b", "x", 8, 8, 1, relu=True),
                conv("c2", conv("c1", "x", 8, 8, 3), 8, 8, 3)]
    nodes.append(helper.make_node("MaxPool", ["x"], ["d"], name="d", kernel_shape=[3, 3], pads=[1] * 4))
    nodes.append(helper.make_node("Concat", branches + ["d"], ["cat"], name="cat", axis=1))
    conv("y", "cat", 32, 8, 1)
    graph = helper.make_graph(nodes, "branches", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


@pytest.fixture(scope="module")
def branches(tmp_path_factory):
    """(model path, its schedule, eight inputs, their outputs from one thread)."""
    path = tmp_path_factory.mktemp("branches") / "branches.onnx"
    _branches_model(path)
    schedule = ios.optimize(path, cost="simulated")
    assert any(len(stage["groups"]) > 1 for stage in schedule.stages)  # branches side by side
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal((1, 8, 16, 16)).astype(np.float32) for _ in range(8)]
    context = ios.Engine(path, schedule, threads=1).create_context()
    ys = [context(x) for x in xs]
    assert all(not np.array_equal(ys[0], other) for other in ys[1:])  # each input its own output
    return path, schedule, xs, ys


def _hammer(call, xs, ys, threads=8, calls=100, same=np.array_equal):
    """`threads` threads make `calls` calls each at once, thread i's call j
    on input (i + j) % 8, so that at any moment the threads run different
    inputs: an output written by another thread's call, or half of each,
    differs from the one-thread output (`same` is false). Returns what went
    wrong."""
    errors, wrong = [], []
    start = threading.Barrier(threads)

    def work(i):
        try:
            start.wait()
            for j in range(calls):
                k = (i + j) % len(xs)
                if not same(call(xs[k]), ys[k]):
                    wrong.append((i, j))
        except Exception as e:  # reported below, not lost in the thread
            errors.append(e)

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return errors, wrong


def test_eight_threads_one_engine(branches):
    """8 threads x 100 calls of engine(x) on one engine (a context per
    thread, made on its first call): every output the one-thread output of
    its input."""
    path, schedule, xs, ys = branches
    engine = ios.Engine(path, schedule, threads=1)
    errors, wrong = _hammer(engine, xs, ys)
    assert not errors and not wrong, (errors[:3], len(wrong))


def test_eight_threads_one_shared_context(branches):
    """One context shared by 8 threads x 100 calls: its runs take turns (a
    lock per context, taken with the GIL released). Without the lock the
    threads ran on one arena at once and got each other's outputs."""
    path, schedule, xs, ys = branches
    context = ios.Engine(path, schedule, threads=1).create_context()
    errors, wrong = _hammer(context, xs, ys)
    assert not errors and not wrong, (errors[:3], len(wrong))


def test_thread_contexts_end_with_their_threads(branches):
    """engine(x)'s per-thread contexts are released when their threads end
    (they were kept in a map by thread id until the engine went, one per
    thread that ever called: a server making a thread per request grew
    without bound); a thread's later calls reuse its own."""
    path, schedule, xs, ys = branches
    engine = ios.Engine(path, schedule, threads=1)
    assert engine.thread_contexts == 0
    holding, release = threading.Barrier(9), threading.Event()

    def work():
        engine(xs[0])
        engine(xs[1])
        holding.wait()
        release.wait()

    for _ in range(2):
        pool = [threading.Thread(target=work) for _ in range(8)]
        for t in pool:
            t.start()
        holding.wait()
        assert engine.thread_contexts == 8  # one per thread, not per call
        release.set()
        for t in pool:
            t.join()
        assert engine.thread_contexts == 0
        release.clear()
    assert np.array_equal(engine(xs[2]), ys[2]) and engine.thread_contexts == 1  # this thread's


# --- On a GPU (marked `cuda`: ctest's "python: module on CUDA") ---------------

def _cuda_test(f):
    """A test of the CUDA backend: marked `cuda`, and skipped (reported as
    skipped, never passed: run_pytest.py) where torch sees no GPU."""
    return pytest.mark.cuda(pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA: torch sees no GPU")(f))


@pytest.fixture(scope="module")
def cuda_engines():
    """The CUDA engine in strict FP32 (no TF32 tensor cores) and the CPU
    engine of the same schedule."""
    schedule = ios.optimize(MODEL, batch=1, cost="simulated", precision="fp32")
    return ios.Engine(MODEL, schedule, backend="cuda"), ios.Engine(MODEL, schedule)


def _close(a, b):
    return np.allclose(a, b, rtol=1e-4, atol=1e-4)


@_cuda_test
def test_cuda_tensors_in_cuda_tensors_out(x):
    """The CUDA backend in strict FP32 (no TF32 tensor cores) against the CPU
    executor on the same schedule and input."""
    schedule = ios.optimize(MODEL, batch=1, cost="simulated", precision="fp32")
    engine = ios.Engine(MODEL, schedule, backend="cuda")
    out = engine(torch.from_numpy(x).cuda())
    assert out.is_cuda and out.dtype == torch.float32
    np.testing.assert_allclose(out.cpu().numpy(), ios.Engine(MODEL, schedule)(x), rtol=1e-4, atol=1e-4)


@_cuda_test
def test_cuda_on_the_callers_stream(x, cuda_engines):
    """A torch CUDA tensor is exported with __dlpack__(stream=S), S the stream
    the inference is enqueued on: torch's current stream (DLPack's 1 for
    the default stream, whose handle is 0), so the input written on it and
    the work queued after on it are ordered with the inference without a
    synchronization."""
    engine, cpu = cuda_engines
    expected = cpu(x)
    side = torch.cuda.Stream()
    _RecordingTensor.streams.clear()
    with torch.cuda.stream(side):
        out = engine(torch.from_numpy(x).cuda().as_subclass(_RecordingTensor))  # written on `side`
        later = out * 2  # queued on `side` after the inference
    side.synchronize()
    assert _RecordingTensor.streams == [side.cuda_stream]
    assert type(out) is torch.Tensor and out.device == torch.device("cuda", 0) and out.dtype == torch.float32
    np.testing.assert_allclose(later.cpu().numpy(), 2 * expected, rtol=1e-4, atol=2e-4)
    _RecordingTensor.streams.clear()
    out = engine(torch.from_numpy(x).cuda().as_subclass(_RecordingTensor))
    assert _RecordingTensor.streams == [1]
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-4, atol=1e-4)


@_cuda_test
def test_cuda_devices_and_producers_checked(x, cuda_engines):
    """A tensor on another GPU, and a CUDA tensor of a producer whose outputs
    ios cannot make (not torch, not CuPy): refused in one line before the
    producer exports it."""
    engine, _ = cuda_engines
    other = _Producer(x, device=(2, 1))
    with pytest.raises(ios.UserError, match=r"^input 'input' is on cuda:1 but the engine runs on cuda:0; pass "
                                            r'tensors on cuda:0 \(tensor.to\("cuda:0"\)\)$'):
        engine(other)
    foreign = _Producer(x, device=(2, 0))
    with pytest.raises(ios.UserError, match=r"^input 'input' is a CUDA tensor of type _Producer: ios gives CUDA "
                                            r"outputs as torch or CuPy tensors; pass torch.from_dlpack\(x\)"):
        engine(foreign)
    assert other.calls == [] and foreign.calls == []


def _add_model(path):
    """relu(conv(a) + b) of two 1x4x8x8 inputs, the convolution 1x1 with
    identity weights: ResNet's residual form (the add and the ReLU fused into
    the convolution), whose output relu(a + b) is exact in FP32."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4, 8, 8]) for n in ("a", "b", "y")]
    identity = numpy_helper.from_array(np.eye(4, dtype=np.float32).reshape(4, 4, 1, 1), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["a", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
                               helper.make_node("Add", ["c", "b"], ["s"], name="add"),
                               helper.make_node("Relu", ["s"], ["y"], name="relu")], "add", io[:2], io[2:],
                              [identity])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


@_cuda_test
def test_cuda_inputs_on_one_device(tmp_path):
    """Every input on the engine's GPU (enqueued) or every one in host memory
    (run, copied in and out); one of each is refused naming both."""
    _add_model(tmp_path / "add.onnx")
    engine = ios.Engine(tmp_path / "add.onnx", backend="cuda", precision="fp32")
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((1, 4, 8, 8)).astype(np.float32) for _ in range(2))
    with pytest.raises(ios.UserError, match=r"^input 'a' is on cpu but input 'b' is on cuda:0; give every input on "
                                            r"the same device$"):
        engine(a=a, b=torch.from_numpy(b).cuda())
    expected = np.maximum(a + b, 0)
    out = engine(a=torch.from_numpy(a).cuda(), b=torch.from_numpy(b).cuda())
    assert out.is_cuda
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-6, atol=1e-6)
    host = engine(a=a, b=b)
    assert isinstance(host, np.ndarray)
    np.testing.assert_allclose(host, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(ios.Engine(tmp_path / "add.onnx")(a=a, b=b), expected)  # the model as meant


@_cuda_test
def test_cupy_in_cupy_out(x, cuda_engines):
    cupy = pytest.importorskip("cupy")
    engine, cpu = cuda_engines
    out = engine(cupy.asarray(x))
    assert isinstance(out, cupy.ndarray) and out.dtype == cupy.float32 and out.device.id == 0
    np.testing.assert_allclose(cupy.asnumpy(out), cpu(x), rtol=1e-4, atol=1e-4)


@_cuda_test
def test_cuda_eight_threads_one_engine(branches):
    """8 threads x 100 calls with torch CUDA tensors, each thread on a torch
    stream of its own and a context of its own."""
    path, schedule, xs, ys = branches
    engine = ios.Engine(path, schedule, backend="cuda", precision="fp32")
    local = threading.local()

    def call(x):
        if not hasattr(local, "stream"):
            local.stream = torch.cuda.Stream()
        with torch.cuda.stream(local.stream):
            return engine(torch.from_numpy(x).cuda()).cpu().numpy()

    errors, wrong = _hammer(call, xs, ys, same=_close)
    assert not errors and not wrong, (errors[:3], len(wrong))
    assert engine.thread_contexts == 0


# --- Hostile use (issue 53) ---------------------------------------------------

def _python(code, timeout=120):
    """Runs `code` in a fresh interpreter that imports this ios: a crash or
    a hang there fails the test instead of ending or stopping the run."""
    path = os.pathsep.join(p for p in [PACKAGE_DIR, os.environ.get("PYTHONPATH", "")] if p)
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=timeout, env=dict(os.environ, PYTHONPATH=path, IOS_TEST_MODEL=MODEL))
    except subprocess.TimeoutExpired:
        pytest.fail(f"the interpreter hung for {timeout} s (killed)")


def test_uninitialized_objects_raise(tmp_path):
    """Every method and property of every class the module exposes, on an
    object made with __new__ and never initialized: a TypeError that says
    so, not a crash (the interpreter segfaulted on Schedule.json and
    Engine.inputs)."""
    never = tmp_path / "never-written.json"
    r = _python(f"""
        import json, ios
        results = {{}}
        for cls in (ios.Schedule, ios.Engine, ios.Context):
            names = [n for n in dir(cls) if not n.startswith("_")] + [n for n in ["__repr__"] if n in cls.__dict__]
            for name in names:
                attr = cls.__dict__.get(name)
                if isinstance(attr, staticmethod) or name in ("load", "from_json"):
                    continue  # no self: Schedule.load and Schedule.from_json make one
                obj = cls.__new__(cls)
                try:
                    if isinstance(attr, property):
                        getattr(obj, name)
                    elif name == "save":
                        obj.save({str(never)!r})
                    else:
                        getattr(obj, name)()
                    results[f"{{cls.__name__}}.{{name}}"] = "no error"
                except TypeError as e:
                    results[f"{{cls.__name__}}.{{name}}"] = str(e)
        print(json.dumps(results))
    """)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    results = json.loads(r.stdout)
    # Every property and method was tried (each class has them).
    for expected in ["Schedule.json", "Schedule.stages", "Schedule.save", "Schedule.__repr__", "Engine.inputs",
                     "Engine.outputs", "Engine.backend", "Engine.device_memory_size", "Engine.predict",
                     "Engine.create_context", "Context.predict"]:
        assert expected in results, sorted(results)
    for name, message in results.items():
        cls = name.split(".")[0]
        assert message.startswith(f"this ios.{cls} was never initialized (made with ios.{cls}.__new__ and no "
                                  f"__init__); "), (name, message)
    assert not never.exists()


def test_a_method_of_another_class_is_a_type_error(engine, schedule):
    with pytest.raises(TypeError, match=r"expected an ios\.Schedule, got Engine"):
        ios.Schedule.json.fget(engine)
    with pytest.raises(TypeError, match=r"expected an ios\.Engine, got int"):
        ios.Engine.inputs.fget(42)


@pytest.mark.parametrize("cls", ["Engine", "Context"])
def test_calling_an_uninitialized_engine_raises(cls):
    """engine(x) on an object made with __new__: a TypeError, not a process
    blocked forever holding the GIL (the mutex was uninitialized memory) or
    an abort."""
    r = _python(f"""
        import numpy as np, ios
        obj = ios.{cls}.__new__(ios.{cls})
        try:
            obj(np.zeros((1, 3, 224, 224), np.float32))
            print("no error")
        except TypeError as e:
            print(e)
    """, timeout=60)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    assert r.stdout.startswith(f"this ios.{cls} was never initialized"), r.stdout


def test_an_initialized_engine_made_through_new_runs(x, y):
    """__new__ then __init__ is how Python makes every object: it works."""
    engine = ios.Engine.__new__(ios.Engine)
    engine.__init__(MODEL, batch=1)
    np.testing.assert_allclose(engine(x), y, rtol=1e-4, atol=1e-5)


def test_a_wrong_shape_is_refused_before_any_copy(engine, x):
    """A broadcast view holds 4 bytes whatever its shape; converting it to a
    row-major array first cost its full size (1.6-3.2 GB in the report)
    before the shape was refused. Here 16 images' worth, 9.6 MB: numpy's
    allocations are traced by tracemalloc, and none of that size may happen."""
    view = np.broadcast_to(np.zeros(1, np.float32), (16, 3, 224, 224))
    tracemalloc.start()
    try:
        with pytest.raises(ios.UserError, match=r"input 'input' has shape 16x3x224x224 but the model needs 1x3x224x224"):
            engine(view)
        with pytest.raises(ios.UserError, match=r"unknown input 'extra': the model's inputs are 'input'"):
            engine({"input": x, "extra": view})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < view.size * 4 // 10, peak


def _relu_model(path, shape):
    """A one-node model (Relu) with an input of `shape`: large inputs, cheap to run."""
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_an_input_too_large_to_copy(tmp_path):
    """A column-major input whose row-major copy cannot be allocated (the
    address space is capped 32 MiB above what the process holds, the copy
    needs 64 MiB): a MemoryError naming the input and the bytes, not
    RuntimeError "Internal error: pybind11::error_already_set called while
    Python error indicator not set". In a subprocess, which the cap would
    otherwise hamper."""
    shape = (1, 16, 1024, 1024)
    model = tmp_path / "relu.onnx"
    _relu_model(model, shape)
    r = _python(f"""
        import resource
        import numpy as np, ios
        engine = ios.Engine({str(model)!r})
        x = np.asfortranarray(np.ones({shape!r}, np.float32))
        engine(np.ascontiguousarray(x))  # the context and its memory made before the cap
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + (32 << 20), resource.RLIM_INFINITY))
        try:
            engine(x)
            print("no error")
        except MemoryError as e:
            print("MemoryError:", e)
        except Exception as e:
            print(type(e).__name__ + ":", e)
    """)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    assert r.stdout.strip() == (
        "MemoryError: input 'x' (shape 1x16x1024x1024) is not a row-major (C-contiguous) array, and its "
        "row-major copy of 67108864 bytes could not be allocated: not enough memory"), r.stdout


class _RefusingProducer:
    """A DLPack producer whose export fails, as torch's does for tensors it
    cannot describe."""

    def __dlpack__(self, stream=None):
        raise ValueError("cannot export this\nsecond line")


@pytest.mark.parametrize("make, message", [
    (lambda x: torch.from_numpy(x).requires_grad_(),
     r"input 'input' requires grad \(it is part of autograd's graph\); pass tensor\.detach\(\)"),
    (lambda x: torch.nn.Parameter(torch.from_numpy(x)),
     r"input 'input' requires grad \(it is part of autograd's graph\); pass tensor\.detach\(\)"),
    (lambda x: torch.empty(x.shape, device="meta"),
     r"input 'input' is on torch's meta device, which holds no data; pass a tensor with data"),
    (lambda x: torch.from_numpy(x).to_sparse(),
     r"input 'input' is a tensor of layout torch\.sparse_coo \(sparse\); pass tensor\.to_dense\(\)"),
    (lambda x: _RefusingProducer(),
     r"input 'input': its __dlpack__\(\) failed \(ValueError: cannot export this\); pass a dense float32"),
])
def test_tensors_dlpack_cannot_export(engine, x, make, message):
    """torch's RuntimeError (or any producer's error) becomes an ios.UserError
    of one line that says what to pass instead."""
    with pytest.raises(ios.UserError, match="^" + message) as e:
        engine(make(x))
    assert "\n" not in str(e.value)


def test_save_replaces_only_a_schedule_unless_forced(schedule, tmp_path):
    """ios-optimize -o's rule: an existing file that is not an ios schedule
    (a user's notes, a model) is replaced only with force=True; an existing
    schedule is replaced."""
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    with pytest.raises(ios.UserError, match=r"notes\.txt: the file exists and is not an ios schedule; give another "
                                            r"path, remove the file, or pass --force to overwrite it"):
        schedule.save(notes)
    assert notes.read_text() == "mine"
    model = tmp_path / "model.onnx"
    shutil.copyfile(MODEL, model)
    with pytest.raises(ios.UserError, match=r"is not an ios schedule"):
        schedule.save(model)
    with open(MODEL, "rb") as a, open(model, "rb") as b:
        assert a.read() == b.read()
    with pytest.raises(TypeError):
        schedule.save(notes, True)  # force is a keyword: save(path, force=True)
    schedule.save(notes, force=True)
    assert ios.Schedule.load(notes).stages == schedule.stages
    sequential = ios.optimize(MODEL, batch=1, cost="simulated", scheduler="sequential")
    sequential.save(notes)  # a schedule now: replaced without force
    assert ios.Schedule.load(notes).scheduler == "sequential"


def test_options_that_do_nothing_are_refused(schedule, tmp_path):
    """What ios-optimize and ios-run refuse as doing nothing, the API refuses
    with the same message (one rule in the library for both)."""
    refused = [
        (dict(cost="simulated", profile_db=str(tmp_path / "p.sqlite")),
         ["--cost", "simulated", "--profile-db", str(tmp_path / "p.sqlite")],
         r"--profile-db has no effect with --cost simulated: the profile database caches measured latencies"),
        (dict(cost="simulated", profile_budget="10"), ["--cost", "simulated", "--profile-budget", "10"],
         r"--profile-budget has no effect with --cost simulated"),
        (dict(cost="simulated", scheduler="sequential", time_limit=5),
         ["--cost", "simulated", "--scheduler", "sequential", "--time-limit", "5"],
         r"--time-limit has no effect with --scheduler sequential"),
        (dict(cost="simulated", scheduler="greedy", threads=2),
         ["--cost", "simulated", "--scheduler", "greedy", "--threads", "2"],
         r"--threads has no effect with --scheduler greedy"),
        (dict(cost="measured", scheduler="sequential", device_profile="h100"),
         ["--cost", "measured", "--scheduler", "sequential", "--device-profile", "h100"],
         r"--device-profile has no effect with --cost measured and --scheduler sequential"),
    ]
    for options, flags, message in refused:
        with pytest.raises(ios.UserError, match="^" + message) as e:
            ios.optimize(MODEL, batch=1, **options)
        cli = subprocess.run([os.path.join(IOS_BIN, "ios-optimize"), MODEL, "--batch", "1", *flags,
                              "-o", str(tmp_path / "s.json")], capture_output=True, text=True)
        assert cli.returncode == 2 and cli.stderr == f"ios-optimize: error: {e.value}\n", (cli.stderr, str(e.value))
    with pytest.raises(ios.UserError, match=r"^--retarget has no effect without --batch, --input-shape or --precision"):
        ios.Engine(MODEL, schedule, retarget=True)
    with pytest.raises(ios.UserError, match=r"^--retarget has no effect without a schedule file"):
        ios.Engine(MODEL, batch=1, retarget=True)
    # With something to retarget it to, it is taken.
    assert ios.Engine(MODEL, schedule, batch=2, retarget=True).inputs[0]["shape"] == (2, 3, 224, 224)
