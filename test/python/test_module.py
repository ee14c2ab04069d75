"""The Python module ios (python/ios_module.cpp) on the CPU backend: numpy
arrays and torch tensors in and out, the outputs those of `ios-run --backend
cpu` on the same input and within float32's rounding of a float64 PyTorch
truth, different for different inputs; wrong shapes, element types, devices,
missing or extra inputs and a schedule for another model each a clear
ios.UserError; several threads, one context each, identical outputs;
nothing written to standard output. The CUDA backend's test (marked `cuda`)
runs as its own ctest entry, "python: module on CUDA", skipped without CUDA.

Run by ctest ("python: module", `-m "not cuda"`) with PYTHONPATH=build/python,
IOS_MODELS_DIR and IOS_BIN set, or by hand:
    PYTHONPATH=build/python IOS_MODELS_DIR=onnx_models/generated IOS_BIN=build/apps \
        /usr/bin/python3 -m pytest test/python
"""

import ctypes
import json
import os
import subprocess
import threading

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
IOS_BIN = os.environ.get("IOS_BIN") or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(ios.__file__))), "apps")


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


def _capsule_on_device(device_type, shape, keep):
    """A DLPack capsule of a float32 tensor said to live on `device_type`
    (2: CUDA, 4: OpenCL): what a GPU framework would hand over, made without one."""
    dims = (ctypes.c_int64 * len(shape))(*shape)
    managed = _DLManagedTensor()
    managed.dl_tensor.data = 0x1000
    managed.dl_tensor.device = _DLDevice(device_type, 0)
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
    with pytest.raises(ios.UserError, match=r"input 'input' is in cuda memory but the engine runs on the cpu backend"):
        engine(_capsule_on_device(2, (1, 3, 224, 224), keep))
    with pytest.raises(ios.UserError, match=r"input 'input' is on a device of DLPack type 4"):
        engine(_capsule_on_device(4, (1, 3, 224, 224), keep))


def test_cuda_backend_without_a_gpu(schedule):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ios.NoDeviceError, match=r"^no CUDA device"):
        ios.Engine(MODEL, schedule, backend="cuda")


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


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA: torch sees no GPU")
def test_cuda_tensors_in_cuda_tensors_out(x):
    """The CUDA backend in strict FP32 (no TF32 tensor cores) against the CPU
    executor on the same schedule and input."""
    schedule = ios.optimize(MODEL, batch=1, cost="simulated", precision="fp32")
    engine = ios.Engine(MODEL, schedule, backend="cuda")
    out = engine(torch.from_numpy(x).cuda())
    assert out.is_cuda and out.dtype == torch.float32
    np.testing.assert_allclose(out.cpu().numpy(), ios.Engine(MODEL, schedule)(x), rtol=1e-4, atol=1e-4)
