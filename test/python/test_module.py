"""The Python module ios (python/ios_module.cpp) on the CPU backend: numpy
arrays and torch tensors in and out; wrong shapes, element types, devices,
missing or extra inputs and a schedule for another model each a clear
ios.UserError; several threads, one context each, identical outputs;
nothing written to standard output.

Run by ctest ("python: module") with PYTHONPATH=build/python and
IOS_MODELS_DIR set, or by hand:
    PYTHONPATH=build/python IOS_MODELS_DIR=onnx_models/generated /usr/bin/python3 -m pytest test/python
"""

import ctypes
import json
import os
import threading

import numpy as np
import pytest
import torch

import ios

MODELS = os.environ.get("IOS_MODELS_DIR", os.path.join(os.path.dirname(__file__), "../../onnx_models/generated"))
MODEL = os.path.join(MODELS, "squeezenet1_1-bdyn.onnx")
OTHER_MODEL = os.path.join(MODELS, "vit_style.onnx")


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


@pytest.mark.skip(reason="not run: the module's CUDA path needs a GPU and a Python with CUDA torch; "
                         "the C++ GPU tests (ios_gpu_tests, 'engine API') carry its acceptance")
def test_cuda_tensors_in_cuda_tensors_out(schedule, x):
    engine = ios.Engine(MODEL, schedule, backend="cuda")
    out = engine(torch.from_numpy(x).cuda())
    assert out.is_cuda
    np.testing.assert_allclose(out.cpu().numpy(), ios.Engine(MODEL, schedule)(x), rtol=5e-2, atol=5e-2)
