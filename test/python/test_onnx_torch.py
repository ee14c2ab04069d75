"""scripts/gpu/onnx_torch.py, the PyTorch evaluator of ONNX graphs of the GPU
kit: its float32 outputs against ONNX Runtime's (node tools/ort_run.js, the
npm package onnxruntime-node), its float64 outputs against the float64
truths export_models.py --truth wrote beside the models, its 16-bit
semantics, the opset-18 forms of the reductions, Split and Pad, the CLI, and
calibrate + scale-marks on SqueezeNet (with build/tools/ios-model-weights
when it is built, else with a Python port of its strip and fill).

Run with Debian's Python (torch 1.13, onnx 1.12):
    /usr/bin/python3 -m pytest test/python/test_onnx_torch.py
IOS_MODELS_DIR (default onnx_models/generated) names the models' folder;
IOS_MODEL_WEIGHTS the ios-model-weights program (default
build/tools/ios-model-weights).  About 20-30 s on a 2-core machine.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(REPO, "scripts/gpu"))
import onnx_torch as ot  # noqa: E402

MODELS = os.environ.get("IOS_MODELS_DIR", os.path.join(REPO, "onnx_models/generated"))
WEIGHTS_TOOL = os.environ.get("IOS_MODEL_WEIGHTS", os.path.join(REPO, "build/tools/ios-model-weights"))
ORT_RUN = os.path.join(REPO, "tools/ort_run.js")
SCRIPT = os.path.join(REPO, "scripts/gpu/onnx_torch.py")

# Models compared with ONNX Runtime at float32 (and with their float64 truth
# where the export wrote one): every op type of onnx_models/generated appears
# in at least one of them.
ORT_MODELS = [
    "squeezenet1_1-bdyn", "inception_v3-75x75", "convnext_tiny-64x64-op17", "vit_style",
    "deeplabv3_resnet50-128x128-op17", "swin_t-112x112", "r2plus1d_18-4x28x28", "audio_cnn",
    "retinanet_resnet50_fpn-128x128", "maxvit_t", "fcos_resnet50_fpn-128x128",
    "ssdlite320_mobilenet_v3_large", "hrnet_style",
]

torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))


def model_path(stem):
    path = os.path.join(MODELS, stem + ".onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing: run scripts/make-models.sh")
    return path


def have_ort():
    return shutil.which("node") and os.path.isdir(os.path.join(REPO, "node_modules/onnxruntime-node"))


def model_input(stem, model, batch=2):
    """The export's seeded input (<stem>.input.npy), else a seeded N(0,1) one."""
    base = stem.split(".")[0]
    path = os.path.join(MODELS, base + ".input.npy")
    if os.path.exists(path):
        return np.load(path)
    shape = ot.Evaluator(model).input_shapes(batch)[model.graph.input[0].name]
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def ort_outputs(path, x, tmp_path):
    if not have_ort():
        pytest.skip("node or node_modules/onnxruntime-node is missing (scripts/setup.sh installs it)")
    inp = tmp_path / "input.npy"
    np.save(inp, x.astype(np.float32))
    out = tmp_path / "ort"
    out.mkdir()
    r = subprocess.run(["node", ORT_RUN, path, str(inp), str(out) + "/"], capture_output=True, text=True,
                       env=dict(os.environ, ORT_THREADS="2"))
    assert r.returncode == 0, r.stderr
    return {p[:-4]: np.load(out / p) for p in os.listdir(out)}


def truth_of(stem, names):
    def path(n):
        return os.path.join(MODELS, f"{stem}.truth.npy" if len(names) == 1 else f"{stem}.truth.{n}.npy")
    if not all(os.path.exists(path(n)) for n in names):
        return None
    return {n: np.load(path(n)) for n in names}


def rel(a, b):
    return float(np.abs(a.astype(np.float64) - b).max() / max(np.abs(b).max(), 1e-30))


@pytest.mark.parametrize("stem", ORT_MODELS)
def test_fp32_matches_onnx_runtime_and_fp64_the_truth(stem, tmp_path):
    path = model_path(stem)
    model = onnx.load(path)
    x = model_input(stem, model)
    name = model.graph.input[0].name
    ours = ot.run(model, {name: x}, "fp32")
    ort = ort_outputs(path, x, tmp_path)
    assert set(ours) == set(ort)
    truth = truth_of(stem, list(ours))
    for n, o in ort.items():
        y = ours[n]
        assert y.dtype == np.float32 and y.shape == o.shape, (n, y.dtype, y.shape, o.shape)
        # rtol 1e-3, atol 1e-4 of max|out|, or twice ONNX Runtime's own
        # float32 error against the truth where that is larger (the deepest
        # nets: DeepLabV3 1.2e-4, FCOS's box regression)
        atol = 1e-4 * np.abs(o).max()
        if truth is not None:
            atol = max(atol, 2 * np.abs(o - truth[n]).max())
        bound = atol + 1e-3 * np.abs(o)
        assert np.all(np.abs(y - o) <= bound), f"{stem}:{n}: fp32 vs ORT max rel-to-max {rel(y, o):.2e}"
    if truth is None:
        return
    y64 = ot.run(model, {name: x}, "fp64")
    for n, t in truth.items():
        assert y64[n].dtype == np.float64
        # The file's float32 weights (batch norm folded into them by the
        # export) are the only rounding left: 3e-5 of max|out| at most.
        assert rel(y64[n], t) <= 1e-4, f"{stem}:{n}: fp64 vs truth {rel(y64[n], t):.2e}"
        assert rel(y64[n], t) <= rel(ort[n], t)
        # and our float32 is about as good as ONNX Runtime's
        assert rel(ours[n], t) <= 2 * rel(ort[n], t) + 1e-5, (stem, n, rel(ours[n], t), rel(ort[n], t))


def test_typed_fp16_file_runs_as_the_float32_file_at_fp16(tmp_path):
    """A typed *.fp16.onnx and its float32 original at precision fp16 are the
    same computation (16-bit storage everywhere); its error against the
    float64 truth is that of ONNX Runtime's float16 run of the typed file."""
    stem = "squeezenet1_1-64x64"
    typed, plain = model_path(stem + ".fp16"), model_path(stem)
    x = model_input(stem, onnx.load(plain))
    a = ot.run(typed, {"input": x}, "fp16")["output"]
    b = ot.run(plain, {"input": x}, "fp16")["output"]
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    assert np.array_equal(a, a.astype(np.float16).astype(np.float32))  # rounded to float16
    t = truth_of(stem, ["output"])["output"]
    ort = ort_outputs(typed, x, tmp_path)["output"]
    assert rel(a, t) <= 2 * rel(ort, t) + 1e-3, (rel(a, t), rel(ort, t))
    # fp64 of the typed file: its 16-bit weights exactly, no rounding after
    y64 = ot.run(typed, {"input": x}, "fp64")["output"]
    assert rel(y64, t) < rel(a, t)


def test_native_fp16_path():
    """The GPU's fp16 path (compute in float16, torch's kernels; a node
    without a float16 kernel in float32, rounded back), exercised on the CPU,
    where torch 1.13 lacks most float16 kernels: about as accurate as the
    emulation."""
    for stem in ("squeezenet1_1-64x64", "vit_style"):
        path = model_path(stem + ".fp16")
        x = model_input(stem, onnx.load(path))
        ev = ot.Evaluator(path, "fp16", native16=True)
        y = ev.run({"input": x})["output"]
        assert y.dtype == torch.float16
        t = truth_of(stem, ["output"])["output"]
        emulated = ot.run(path, {"input": x}, "fp16")["output"]
        assert rel(ev.to_numpy(y), t) <= 2 * rel(emulated, t) + 1e-3


def test_typed_bf16_file_and_precisions():
    stem = "vit_style"
    plain, typed = model_path(stem), model_path(stem + ".bf16")
    x = model_input(stem, onnx.load(plain))
    a = ot.run(typed, {"input": x}, "bf16")["output"]
    b = ot.run(plain, {"input": x}, "bf16")["output"]
    np.testing.assert_array_equal(a, b)
    t = truth_of(stem, ["output"])["output"]
    ref = np.load(os.path.join(MODELS, stem + ".ref-bf16.npy"))
    assert rel(a, t) <= 2 * rel(ref, t) + 1e-3
    y32 = ot.run(plain, {"input": x}, "fp32")["output"]
    ytf = ot.run(plain, {"input": x}, "tf32")["output"]  # no TF32 on the CPU: the same numbers
    np.testing.assert_array_equal(y32, ytf)


def test_flags_restored():
    c = torch.backends.cudnn
    before = (ot.tf32_state(), c.deterministic, c.benchmark)
    stem = "squeezenet1_1-64x64"
    x = model_input(stem, onnx.load(model_path(stem)))
    seen = []
    for precision in ("tf32", "fp32"):
        ot.run(model_path(stem), {"input": x}, precision,
               hook=lambda node, outs, env: seen.append((precision, ot.tf32_state(), c.deterministic)) and None)
    assert {s for s in seen} == {("tf32", (True, True), True), ("fp32", (False, False), True)}
    assert (ot.tf32_state(), c.deterministic, c.benchmark) == before


# --- small graphs: opset-18 forms, hooks, errors ---------------------------------

def graph_model(nodes, inputs, outputs, inits=(), opset=18, ir=8):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def test_opset18_reductions_split_pad():
    x = np.random.default_rng(1).standard_normal((2, 3, 5)).astype(np.float32)
    inits = [numpy_helper.from_array(np.array([1], np.int64), "ax1"),
             numpy_helper.from_array(np.array([0, 1, 0, 0, 2, 0], np.int64), "pads"),
             numpy_helper.from_array(np.array([1, 2], np.int64), "padaxes"),
             numpy_helper.from_array(np.array([1, 0, 0, 2], np.int64), "pads2"),
             numpy_helper.from_array(np.array(0.5, np.float32), "cval")]
    nodes = [
        helper.make_node("ReduceMean", ["x", "ax1"], ["mean"], keepdims=0),
        helper.make_node("ReduceMax", ["x", "ax1"], ["max"]),
        helper.make_node("ReduceSum", ["x"], ["sum_all"], keepdims=0),
        helper.make_node("ReduceL2", ["x", ""], ["noop"], noop_with_empty_axes=1),
        helper.make_node("Split", ["x"], ["s0", "s1"], axis=2, num_outputs=2),
        helper.make_node("Pad", ["x", "pads"], ["pad"], mode="reflect"),
        helper.make_node("Pad", ["x", "pads2", "cval", "padaxes"], ["pad2"]),
    ]
    outs = ["mean", "max", "sum_all", "noop", "s0", "s1", "pad", "pad2"]
    m = graph_model(nodes, [vi("x", [2, 3, 5])], [vi(o, None) for o in outs], inits)
    r = ot.run(m, {"x": x}, "fp64")
    xd = x.astype(np.float64)
    np.testing.assert_allclose(r["mean"], xd.mean(1), rtol=1e-12)
    np.testing.assert_allclose(r["max"], xd.max(1, keepdims=True))
    np.testing.assert_allclose(r["sum_all"], xd.sum(), rtol=1e-12)
    np.testing.assert_array_equal(r["noop"], xd)
    np.testing.assert_array_equal(r["s0"], xd[:, :, :3])  # ceil(5/2), then the rest
    np.testing.assert_array_equal(r["s1"], xd[:, :, 3:])
    np.testing.assert_array_equal(r["pad"], np.pad(xd, [(0, 0), (1, 2), (0, 0)], mode="reflect"))
    np.testing.assert_array_equal(r["pad2"], np.pad(xd, [(0, 0), (1, 0), (0, 2)], constant_values=0.5))


def test_opset_forms_13_18_21_agree_with_onnx_runtime(tmp_path):
    """onnx_models/make_opset_models.py: the same graphs at opset 13 (IR 7),
    18 and 21 (IR 10): identical float64 outputs, float32 as ORT's."""
    out = tmp_path / "m"
    r = subprocess.run([sys.executable, os.path.join(REPO, "onnx_models/make_opset_models.py"), str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for case in ("cnn", "reduce"):
        got = {}
        for opset in (13, 18, 21):
            path = str(out / f"{case}-opset{opset}.onnx")
            m = onnx.load(path)
            shape = ot.Evaluator(m).input_shapes(1)["input"]
            x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
            got[opset] = ot.run(m, {"input": x}, "fp64")["output"]
            if have_ort():
                sub = tmp_path / f"{case}{opset}"
                sub.mkdir()
                o = ort_outputs(path, x, sub)["output"]
                y = ot.run(m, {"input": x}, "fp32")["output"]
                assert rel(y, o) < 1e-5 and rel(got[opset], o) < 1e-5, (case, opset)
        np.testing.assert_allclose(got[18], got[13], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got[21], got[13], rtol=1e-12, atol=1e-12)


def test_shape_arithmetic_resize_and_hook():
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    inits = [numpy_helper.from_array(np.array([2], np.int64), "two"),
             numpy_helper.from_array(np.array([0], np.int64), "zero"),
             numpy_helper.from_array(np.array([8, 6], np.int64), "hw")]
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Slice", ["shape", "zero", "two"], ["nc"]),
        helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["up"], mode="linear",
                         coordinate_transformation_mode="pytorch_half_pixel"),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["near"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Relu", ["up"], ["y"]),
    ]
    m = graph_model(nodes, [vi("x", ["N", 3, 4, 4])], [vi("y", None), vi("near", None)], inits, opset=13, ir=7)
    seen = []

    def hook(node, outs, env):
        seen.append(node.op_type)
        if node.op_type == "Relu":
            return [outs[0] * 0 + 7]
    r = ot.run(m, {"x": x}, "fp64", hook=hook)
    assert seen == [n.op_type for n in nodes]
    assert np.all(r["y"] == 7) and r["y"].shape == (2, 3, 8, 6)
    want = torch.nn.functional.interpolate(torch.from_numpy(x).double(), size=(8, 6), mode="bilinear",
                                           align_corners=False)
    up = ot.run(m, {"x": x}, "fp64")  # no hook: Relu of the resize
    np.testing.assert_allclose(up["y"], torch.relu(want).numpy(), rtol=1e-12, atol=1e-12)
    near = torch.nn.functional.interpolate(torch.from_numpy(x), size=(8, 6), mode="nearest")
    np.testing.assert_array_equal(r["near"], near.double().numpy())


def test_unimplemented_op_raises():
    m = graph_model([helper.make_node("Loop", ["x"], ["y"], name="the_loop")],
                    [vi("x", [1])], [vi("y", [1])])
    with pytest.raises(NotImplementedError, match=r"^Loop \(node the_loop\)"):
        ot.run(m, {"x": np.zeros(1, np.float32)})


def test_cli_truth_and_run(tmp_path):
    stem = "squeezenet1_1-64x64"
    path = model_path(stem)
    inp = os.path.join(MODELS, stem + ".input.npy")
    r = subprocess.run([sys.executable, SCRIPT, "truth", path, "--input", inp, "--out-dir", str(tmp_path / "t")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    y = np.load(tmp_path / "t" / "output.npy")
    assert y.dtype == np.float64
    assert rel(y, truth_of(stem, ["output"])["output"]) < 1e-6
    r = subprocess.run([sys.executable, SCRIPT, "run", path, "--precision", "fp16", "--input", f"input={inp}",
                        "--out-dir", str(tmp_path / "r")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "r" / "output.npy").dtype == np.float32
    r = subprocess.run([sys.executable, SCRIPT, "run", path, "--input", "nope=x.npy", "--out-dir", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no input 'nope'" in r.stderr
    assert ot.sanitize("a/b:c.d-e_f") == "a_b_c.d-e_f.npy"


# --- calibrate and scale-marks -------------------------------------------------------

def test_hex_marks_as_c_writes_them():
    assert ot._hex32(3.0) == "0x1.8p+1"
    assert ot._hex32(1.0) == "0x1p+0"
    assert ot._hex32(0.0) == "0x0p+0"
    for v in (0.1, 1e-40, 3.4e38, 2.5e-3):
        assert float.fromhex(ot._hex32(v)) == float(np.float32(v))


class Weights:
    """ios-model-weights strip / fill: the program when built, else this
    Python port of tools/model_weights.cpp (same generator: splitmix64 keyed
    by FNV-1a of the tensor's name, uniform with the marked per-channel RMS)."""

    def __init__(self):
        self.tool = WEIGHTS_TOOL if os.access(WEIGHTS_TOOL, os.X_OK) else None

    def __call__(self, verb, src, dst):
        if self.tool:
            r = subprocess.run([self.tool, verb, src, dst], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            return
        m = onnx.load(src)
        (strip_port if verb == "strip" else fill_port)(m)
        onnx.save(m, dst)


def _weight_uses(graph):
    rank = {t.name: len(t.dims) for t in graph.initializer}
    uses, other = {}, set()
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name not in rank:
                continue
            use = None
            if node.op_type in ("Conv", "ConvTranspose") and i == 1:
                use = 0 if node.op_type == "Conv" else 1
            elif node.op_type == "Gemm" and i == 1:
                tb = [a.i for a in node.attribute if a.name == "transB"]
                use = 0 if tb and tb[0] else 1
            elif node.op_type == "MatMul" and i in (0, 1) and rank[name] >= 2:
                use = rank[name] - 1 if i == 1 else rank[name] - 2
            if use is None or uses.get(name, use) != use:
                other.add(name)
            else:
                uses[name] = use
    return {k: v for k, v in uses.items() if k not in other}


def strip_port(m):
    uses = _weight_uses(m.graph)
    for t in m.graph.initializer:
        if t.name not in uses or t.data_type not in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16):
            continue
        v = ot.tensor_to_numpy(t).astype(np.float64)
        if v.size < 1024:
            continue
        ax = uses[t.name]
        ms = np.moveaxis(v, ax, 0).reshape(v.shape[ax], -1)
        rms = np.sqrt((ms * ms).sum(1) / ms.shape[1]).astype(np.float32)
        t.doc_string = ot.MARK + str(ax) + "".join(" " + ot._hex32(r) for r in rms)
        for f in ("raw_data", "float_data", "int32_data"):
            t.ClearField(f)


def _splitmix64(x):
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def fill_port(m):
    for t in m.graph.initializer:
        if not t.doc_string.startswith(ot.MARK):
            continue
        words = t.doc_string[len(ot.MARK):].split()
        ax, rms = int(words[0]), np.array([float.fromhex(w) for w in words[1:]], np.float32)
        dims = list(t.dims)
        n = int(np.prod(dims))
        key = 0xCBF29CE484222325
        for c in t.name.encode():
            key = ((key ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        with np.errstate(over="ignore"):
            idx = np.arange(n, dtype=np.uint64)
            r = _splitmix64(np.uint64(key) ^ (idx * np.uint64(0xD1B54A32D192ED03)))
        u = (r >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 8388608.0) - np.float32(1.0)
        outer, inner = int(np.prod(dims[:ax])), int(np.prod(dims[ax + 1:]))
        scale = (np.float32(1.7320508) * rms).astype(np.float32)
        out = (scale.reshape(1, -1, 1) * u.reshape(outer, dims[ax], inner)).astype(np.float32)
        if t.data_type == TensorProto.FLOAT16:
            raw = out.astype(np.float16).tobytes()
        elif t.data_type == TensorProto.BFLOAT16:
            b = out.view(np.uint32).astype(np.uint64)
            raw = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16).tobytes()
        else:
            raw = out.tobytes()
        t.ClearField("doc_string")
        t.raw_data = raw


def test_weights_port_matches_the_program(tmp_path):
    w = Weights()
    if not w.tool:
        pytest.skip(f"{WEIGHTS_TOOL} is not built (scripts/build.sh): the Python port stands in for it")
    src = model_path("squeezenet1_1-64x64")
    w("strip", src, str(tmp_path / "skel.onnx"))
    w("fill", str(tmp_path / "skel.onnx"), str(tmp_path / "tool.onnx"))
    m = onnx.load(str(tmp_path / "skel.onnx"))
    fill_port(m)
    tool = {t.name: ot.tensor_to_numpy(t) for t in onnx.load(str(tmp_path / "tool.onnx")).graph.initializer}
    for t in m.graph.initializer:
        np.testing.assert_array_equal(ot.tensor_to_numpy(t), tool[t.name], err_msg=t.name)


def test_calibrate_then_scale_marks(tmp_path, capfd):
    """calibrate on SqueezeNet, scale-marks, fill: every rebuilt Conv/Gemm's
    output RMS within 2x of the export's on the same input, and the outputs
    bounded."""
    w = Weights()
    stem = "squeezenet1_1-64x64"
    export = model_path(stem)
    x = model_input(stem, onnx.load(export))
    skel, filled = str(tmp_path / "skel.onnx"), str(tmp_path / "filled.onnx")
    w("strip", export, skel)
    w("fill", skel, filled)
    inp = tmp_path / "x.npy"
    np.save(inp, x)
    scales_path = tmp_path / "scales.json"
    r = subprocess.run([sys.executable, SCRIPT, "calibrate", filled, export, "--input", str(inp),
                        "--out", str(scales_path), "--skeleton", skel], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "max|output|" in r.stderr
    scales = json.loads(scales_path.read_text())
    marked = {t.name for t in onnx.load(skel).graph.initializer if t.doc_string.startswith(ot.MARK)}
    assert scales and set(scales) <= marked and all(s > 0 for s in scales.values())
    # without --skeleton: the initializers that differ between the two models
    assert ot.rebuilt_weights(filled, export) == marked
    skel2, filled2 = str(tmp_path / "skel2.onnx"), str(tmp_path / "filled2.onnx")
    r = subprocess.run([sys.executable, SCRIPT, "scale-marks", skel, str(scales_path), skel2],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    w("fill", skel2, filled2)

    def rms_of(path):
        rms = {}
        ev = ot.Evaluator(path, "fp32")

        def hook(node, outs, env):
            if node.op_type in ("Conv", "Gemm"):
                rms[node.output[0]] = float(outs[0].double().pow(2).mean().sqrt())
        out = ev.run({"input": x}, hook=hook)
        return rms, max(float(v.abs().max()) for v in out.values())

    want, _ = rms_of(export)
    before, max_before = rms_of(filled)
    got, max_after = rms_of(filled2)
    assert max_after <= 50, max_after
    for name, t in want.items():
        assert t / 2 <= got[name] <= 2 * t, (name, t, got[name], before[name])
    print(f"max|out| {max_before:.4g} -> {max_after:.4g}", file=sys.stderr)
