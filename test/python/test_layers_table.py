"""The PyTorch and report side of the GPU kit, without a GPU:
bench/harness/peers.py --cpu-smoke with several precisions and a
per-network time limit (a row that hangs is stopped at its share and the
network's later rows still run); bench/harness/layers.py building every
layer of SqueezeNet on the CPU and joining per-layer times with a synthetic
ios-run trace; scripts/gpu/collect.py on a synthetic kit WORK tree with the
new files (16-bit and batch-16 exports, repeated calls, PyTorch precisions,
per-layer tables) and on the old file set alone.

    /usr/bin/python3 -m pytest -q test/python/test_layers_table.py
"""

import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HARNESS = os.path.join(REPO, "bench", "harness")
PY = os.environ.get("IOS_PYTHON", sys.executable)
MODELS = os.environ.get("IOS_MODELS_DIR", os.path.join(REPO, "onnx_models", "generated"))
SQUEEZENET = os.path.join(MODELS, "squeezenet1_1-bdyn.onnx")
sys.path.insert(0, HARNESS)

import layers  # noqa: E402  (standard library at import)
import peers  # noqa: E402  (standard library at import)


def run(*cmd, timeout=60):
    return subprocess.run([PY, *cmd], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def models_ready():
    """The generated models exist (make-models.sh writes .stamp last); wait
    a little for a generation in progress."""
    stamp = os.path.join(MODELS, ".stamp")
    for _ in range(3):
        if os.path.exists(stamp) and os.path.exists(SQUEEZENET):
            return True
        if not os.path.isdir(MODELS):
            break
        time.sleep(5)
    return os.path.exists(SQUEEZENET)


needs_models = pytest.mark.skipif(not models_ready(), reason=f"no generated models in {MODELS}")


def have(module):
    return subprocess.run([PY, "-c", f"import {module}"], capture_output=True).returncode == 0


needs_torch = pytest.mark.skipif(not (have("torch") and have("onnx")), reason="no torch/onnx for " + PY)


# ----------------------------------------------------------------------------- peers.py

def test_peers_plan_puts_each_networks_cuda_graph_row_first():
    args = SimpleNamespace(model_list=["a", "b"], mode_list=["eager", "cuda_graph", "compile_default"],
                           precision_list=["fp16", "tf32"], batch_list=[16, 1])
    rows = peers.plan_rows(args)
    assert len(rows) == 2 * 3 * 2 * 2
    head = [(r["model"], r["mode"], r["precision"], r["batch"]) for r in rows[:2]]
    assert head == [("a", "cuda_graph", "tf32", 1), ("b", "cuda_graph", "tf32", 1)]
    # then batch 1 before 16, cuda_graph before the others, precisions as listed
    assert [r["batch"] for r in rows[2:]] == sorted(r["batch"] for r in rows[2:])
    assert (rows[2]["model"], rows[2]["mode"], rows[2]["precision"]) == ("a", "cuda_graph", "fp16")
    assert rows[0]["weight"] == 2 and rows[2]["weight"] == 2  # first at their precision
    assert all(r["weight"] == 2 for r in rows if r["batch"] == 16 and r["mode"] == "compile_default")
    assert {r["group"] for r in rows} == {"plain", "compile_default"}
    args.combo_list = [("tf32", 1), ("fp16", 1), ("tf32", 16)]
    rows = peers.plan_rows(args)
    assert {(r["precision"], r["batch"]) for r in rows} == set(args.combo_list)
    assert len(rows) == 2 * 3 * 3 and (rows[0]["mode"], rows[0]["precision"], rows[0]["batch"]) == ("cuda_graph", "tf32", 1)


@needs_models
@needs_torch
def test_peers_cpu_smoke_with_precisions(tmp_path):
    out = tmp_path / "peers.json"
    r = run("bench/harness/peers.py", "--cpu-smoke", "--models", "squeezenet1_1", "--precision", "tf32,fp16,bf16",
            "--batches", "1,2", "--no-calibrate", "--models-dir", MODELS, "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cpu smoke: ok" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["version"] == 2 and doc["precision"] == "tf32" and doc["precisions"] == ["tf32", "fp16", "bf16"]
    assert doc["smoke"] is True
    by = {(x["mode"], x["precision"]): x for x in doc["results"]}
    assert set(by) == {("eager", "tf32"), ("eager", "fp16"), ("eager", "bf16")}
    bf16 = by[("eager", "bf16")]
    assert set(bf16["batches"]) == {"1", "2"}
    for b in ("1", "2"):
        e = bf16["batches"][b]
        assert e["dtype"] == "bfloat16" and e["memory_format"] == "channels_last" and e["finite"]
        assert e["summary"]["median_ms"] > 0 and e["output_shape"] == [int(b), 1000]
    assert bf16["settings"]["cudnn.benchmark"] is True
    assert by[("eager", "tf32")]["batches"]["1"]["dtype"] == "float32"
    assert "skipped" in by[("eager", "fp16")]["batches"]["1"]["error"]
    assert [(x["precision"], x["batch"]) for x in doc["rows"]][0] == ("tf32", 1)


@needs_models
@needs_torch
def test_peers_network_timeout_stops_a_hung_row_and_goes_on(tmp_path):
    out = tmp_path / "peers.json"
    t0 = time.time()
    r = run("bench/harness/peers.py", "--cpu-smoke", "--models", "squeezenet1_1", "--precision", "tf32,bf16",
            "--batches", "1,2", "--no-calibrate", "--models-dir", MODELS, "--network-timeout", "20",
            "--inject-hang", "squeezenet1_1:eager:tf32:2", "--out", str(out))
    wall = time.time() - t0
    assert r.returncode == 1 and "cpu smoke: FAILED" in r.stdout, r.stdout + r.stderr
    # 20 s for the network, not less: the row after the hung one starts a new
    # worker (a fresh PyTorch import), which takes several seconds on a loaded
    # 2-core machine and must fit in what the budget leaves it.
    assert wall < 45, wall
    doc = json.loads(out.read_text())
    rows = {(x["precision"], x["batch"]): x for x in doc["rows"]}
    assert rows[("tf32", 2)]["result"] == "error" and rows[("tf32", 2)]["wall_s"] < 20
    assert rows[("tf32", 2)]["cap_s"] < 20
    by = {x["precision"]: x for x in doc["results"]}
    assert "timed out" in by["tf32"]["batches"]["2"]["error"]
    assert "--network-timeout" in by["tf32"]["batches"]["2"]["error"]
    # the rows after the stopped one ran, on a new worker
    assert by["bf16"]["batches"]["2"]["summary"]["median_ms"] > 0
    assert by["tf32"]["batches"]["1"]["summary"]["median_ms"] > 0
    assert "error" not in by["tf32"]  # one batch failed, not the whole row


# ----------------------------------------------------------------------------- layers.py

@needs_models
@needs_torch
@pytest.mark.parametrize("precision", ["tf32", "fp16"])
def test_layers_cpu_smoke_builds_squeezenet(tmp_path, precision):
    out = tmp_path / "layers.json"
    r = run("bench/harness/layers.py", "torch", SQUEEZENET, "--cpu-smoke", "--precision", precision,
            "--batch", "2", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cpu smoke: ok" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["format"] == "ios-layers" and doc["units"] == 39  # docs/unit-formation.md's count
    ls = doc["layers"]
    assert len(ls) == 26 and all(l["cpu_ok"] for l in ls)
    assert all(l["op"] == "Conv" and l["epilogue"] == ["bias", "Relu"] for l in ls)
    assert all(l["name"].endswith("Relu_output_0") for l in ls)  # the unit's last node
    first = ls[0]
    assert first["input_shapes"] == [[2, 3, 224, 224]] and first["weight_shapes"] == [[64, 3, 3, 3]]
    assert first["output_shape"] == [2, 64, 111, 111] and first["conv"][0]["stride"] == [2, 2]
    assert doc["dtype"] == ("float32" if precision == "tf32" else "bfloat16")
    assert doc["layout"] == ("contiguous" if precision == "tf32" else "channels_last")
    assert {u["kind"] for u in doc["not_layers"]} == {"pool", "concat", "layout"}


def ios_optimize():
    build = os.environ.get("IOS_BUILD_DIR", os.path.join(REPO, "build"))
    path = os.path.join(build, "apps", "ios-optimize")
    return path if os.access(path, os.X_OK) else None


@needs_models
@needs_torch
@pytest.mark.skipif(ios_optimize() is None, reason="no built ios-optimize")
def test_layer_names_are_ios_unit_ids(tmp_path):
    """The port of unit formation names layers as ios names its units."""
    sched = tmp_path / "seq.json"
    subprocess.run([ios_optimize(), SQUEEZENET, "--scheduler", "sequential", "--cost", "simulated", "--batch", "1",
                    "-o", str(sched), "--quiet"], check=True, capture_output=True, timeout=60)
    ids = [u for st in json.loads(sched.read_text())["stages"] for g in st["groups"] for u in g]
    out = tmp_path / "layers.json"
    r = run("bench/harness/layers.py", "torch", SQUEEZENET, "--cpu-smoke", "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    names = [l["name"] for l in doc["layers"]] + [u["name"] for u in doc["not_layers"]]
    assert sorted(names) == sorted(ids)


def synthetic_layers(precision="tf32"):
    def conv(name, shape, weight, torch_ms, op="Conv"):
        return {"name": name, "op": op, "nodes": ["Conv", "Relu"], "prologue": [], "epilogue": ["bias", "Relu"],
                "input_shapes": [shape], "weight_shapes": [weight], "output_shape": shape,
                "torch_median_ms": torch_ms}
    return {"format": "ios-layers", "version": 1, "model": "net.onnx", "precision": precision, "batch": 1,
            "layers": [conv("a", [1, 8, 16, 16], [8, 8, 3, 3], 0.010),   # ios 0.011: within 1.15x
                       conv("b", [1, 8, 16, 16], [8, 8, 1, 1], 0.010),   # ios 0.030: slower than 2x
                       conv("c", [1, 8, 16, 16], [8, 1, 3, 3], 0.020, "SepConv"),  # ios 0.022
                       conv("d", [1, 8, 16, 16], [8, 8, 3, 3], 0.010),   # merged in ios: d+e
                       {"name": "fc", "op": "Gemm", "input_shapes": [[1, 8]], "weight_shapes": [[10, 8]],
                        "epilogue": ["bias"], "torch_median_ms": 0.004},  # ios 0.012: slower than 2x
                       conv("z", [1, 8, 16, 16], [8, 8, 3, 3], None)]}   # torch failed


def synthetic_trace():
    def proc(pid, label):
        return [{"ph": "M", "name": "process_name", "pid": pid, "args": {"name": label}}]

    clock = {}

    def x(pid, name, us, tid=0, gap=1.3):
        ts = clock.get((pid, tid), 0.0) + gap
        clock[(pid, tid)] = ts + us
        return {"ph": "X", "cat": "launch", "pid": pid, "tid": tid, "name": name, "ts": ts, "dur": us}
    ev = proc(0, "t1") + proc(1, "t2") + proc(2, "ios")
    # two copies of the sequential schedule (medians: a 11, b 30, c 22, fc 12 us);
    # the GPU idles 6 us before fc (host-bound)
    for pid, (a, b, c, fc) in ((0, (10, 30, 22, 12)), (1, (12, 30, 22, 12))):
        ev += [x(pid, "a", a), x(pid, "b", b), x(pid, "c", c), x(pid, "d+e", 15), x(pid, "fc", fc, gap=6.0),
               x(pid, "pool", 3)]
    # a concurrent schedule (two streams): ignored unless asked for
    ev += [x(2, "a", 500), x(2, "b", 500, tid=1)]
    return {"displayTimeUnit": "ms", "otherData": {"backend": "cuda", "device": "test GPU"}, "traceEvents": ev}


def test_layers_table_joins_by_name(tmp_path):
    (tmp_path / "l.json").write_text(json.dumps(synthetic_layers()))
    (tmp_path / "t.json").write_text(json.dumps(synthetic_trace()))
    trace = layers.read_trace(str(tmp_path / "t.json"))
    assert [p["label"] for p in trace["processes"] if p["used"]] == ["t1", "t2"]
    table = layers.join(synthetic_layers(), trace)
    rows = {r["name"]: r for r in table["rows"]}
    assert rows["a"]["ios_ms"] == pytest.approx(0.011) and rows["a"]["ratio"] == pytest.approx(1.1)
    assert rows["a"]["ios_samples"] == 2 and rows["a"]["shape"] == "1x8x16x16 * 8x8x3x3"
    assert rows["b"]["ratio"] == pytest.approx(3.0)
    assert rows["d"]["ios_ms"] is None and "d+e" in rows["d"]["note"]
    assert rows["z"]["ratio"] is None
    s = table["summary"]
    assert s["layers"] == 6 and s["matched"] == 4 and s["convolutions_matched"] == 3
    assert s["convolutions_within_1.15x"] == 2 and s["fraction_convolutions_within_1.15x"] == pytest.approx(2 / 3)
    assert s["slower_than_2x"] == 2 and s["convolutions_slower_than_2x"] == 1
    assert s["ios_sum_ms"] == pytest.approx(0.011 + 0.030 + 0.022 + 0.012)
    assert s["worst"][0]["name"] == "b"
    assert s["host_bound"] == 1 and "waited 6.0 us" in rows["fc"]["note"] and rows["b"]["note"] is None
    assert rows["b"]["ios_gap_us"] == pytest.approx(1.3)
    # the concurrent schedule only when named
    only = layers.join(synthetic_layers(), layers.read_trace(str(tmp_path / "t.json"), ["ios"]))
    assert {r["name"]: r["ios_ms"] for r in only["rows"]}["a"] == pytest.approx(0.5)
    # the command line, anywhere (standard library only)
    r = run("bench/harness/layers.py", "table", str(tmp_path / "l.json"), str(tmp_path / "t.json"), "--md")
    assert r.returncode == 0, r.stderr
    assert "convolutions within 1.15x of PyTorch: 2 of 3 (67%); slower than 2x: 2" in r.stdout
    assert "| b | Conv | 1x8x16x16 * 8x8x1x1 | bias+Relu | 0.0300 | 0.0100 | 3.00x |" in r.stdout
    r = run("bench/harness/layers.py", "table", str(tmp_path / "l.json"), str(tmp_path / "t.json"),
            "--schedule", "nope")
    assert r.returncode == 2 and "no schedule labelled nope" in r.stderr


# ----------------------------------------------------------------------------- collect.py

def export(runs, precision="tf32", batch=1):
    return {"format": "ios-times", "version": 1,
            "runs": [{"name": name, "backend": "cuda", "batch": batch, "precision": precision,
                      "latency_metric": "gpu_compute",
                      "summary": {"count": 100, "median_ms": med, "mean_ms": med, "min_ms": med, "p90_ms": med,
                                  "p99_ms": med, "cv": 0.01},
                      "end_to_end_summary": {"count": 100, "median_ms": med + 0.05}} for name, med in runs]}


def peer_row(model, mode, precision, batches):
    return {"model": model, "mode": mode, "precision": precision,
            "batches": {str(b): ({"summary": {"count": 100, "median_ms": v}, "end_to_end_summary": {"median_ms": v}}
                                 if isinstance(v, float) else {"error": v}) for b, v in batches.items()}}


def write_json(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)


def collect(tmp_path, work):
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run([PY, os.path.join(REPO, "scripts", "gpu", "collect.py"), str(work), str(out),
                        str(tmp_path / "nopack")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return (out / "bench.md").read_text(), json.loads((out / "timings.json").read_text())


def test_collect_new_files(tmp_path):
    work = tmp_path / "work"
    t = work / "results" / "times"
    net = "net-bdyn"
    write_json(str(t / f"{net}-graph.json"), export([("sequential", 4.0), ("ios", 2.0)]))
    write_json(str(t / f"{net}-plain.json"), export([("sequential", 6.0), ("ios", 5.0)]))
    write_json(str(t / f"{net}-fp16-graph.json"), export([("sequential", 3.0), ("ios", 1.5)], "fp16"))
    write_json(str(t / f"{net}-bf16-graph.json"), export([("sequential", 3.2), ("greedy", 1.6)], "bf16"))
    write_json(str(t / f"{net}-b16-tf32-graph.json"), export([("sequential", 40.0), ("ios", 30.0)], "tf32", 16))
    write_json(str(t / f"{net}-b16-fp16-graph.json"), export([("sequential", 20.0), ("ios", 16.0)], "fp16", 16))
    for i, (s, o) in enumerate([(4.0, 2.0), (5.0, 2.2), (3.0, 1.8)], 1):
        write_json(str(t / f"{net}-repeat{i}-graph.json"), export([("sequential", s), ("ios", o)]))
    write_json(str(t / "peers.json"), {
        "format": "ios-peers", "version": 2, "precision": "tf32", "precisions": ["tf32", "fp16", "bf16"],
        "results": [peer_row("net", "cuda_graph", "tf32", {1: 1.8, 16: 25.0}),
                    peer_row("net", "eager", "tf32", {1: 6.0, 16: "timed out after 9 s"}),
                    peer_row("net", "cuda_graph", "fp16", {1: 2.0, 16: 12.0}),
                    peer_row("net", "cuda_graph", "bf16", {1: 2.1})]})
    write_json(str(t / f"layers-{net}-tf32.json"), synthetic_layers())
    write_json(str(work / "results" / "traces" / f"{net}-tf32-layers.json"), synthetic_trace())
    write_json(str(t / f"layers-{net}-fp16.json"), synthetic_layers("fp16"))  # no trace: reported
    # bf16: no per-layer trace, so the timing run's (its sequential process only)
    write_json(str(t / f"layers-{net}-bf16.json"), synthetic_layers("bf16"))
    timing_trace = synthetic_trace()
    for e in timing_trace["traceEvents"]:
        if e.get("name") == "process_name":
            e["args"]["name"] = {0: "sequential", 1: "greedy", 2: "ios"}[e["pid"]]
    write_json(str(work / "results" / "traces" / f"{net}-bf16-graph.json"), timing_trace)
    md, doc = collect(tmp_path, work)

    # (a) precisions and batches, ios and PyTorch
    assert "## Precision and batch" in md
    assert "| net-bdyn | TF32 | 1 | 4.0000 | 2.0000 (ios) | 1.8000 | 6.0000 | 0.90x |" in md
    assert "| net-bdyn | FP16 | 1 | 3.0000 | 1.5000 (ios) | 2.0000 | — | 1.33x |" in md
    assert "| net-bdyn | BF16 | 1 | 3.2000 | 1.6000 (greedy) | 2.1000 | — | 1.31x |" in md
    assert "| net-bdyn | TF32 | 16 | 40.0000 | 30.0000 (ios) | 25.0000 | not run: timed out after 9 s | 0.83x |" in md
    assert "| net-bdyn | FP16 | 16 | 20.0000 | 16.0000 (ios) | 12.0000 | — | 0.75x |" in md
    e = doc["networks"][net]
    assert set(e["by_precision"]) == {"tf32-b1", "fp16-b1", "bf16-b1", "tf32-b16", "fp16-b16"}
    assert set(e["peers_by_precision"]) == {"tf32-b1", "tf32-b16", "fp16-b1", "fp16-b16", "bf16-b1"}
    # the TF32 batch-1 table as before, the variants not mixed into it
    assert set(e["schedules"]) == {"sequential", "ios"}
    assert e["schedules"]["ios"]["graph"]["gpu_compute"]["median_ms"] == 2.0
    assert "| PyTorch cuda_graph | — | 1.8000 | — | 1.8000 | 2.22x |" in md
    assert not any(n.endswith(("-fp16", "-repeat1", "-b16-tf32")) for n in doc["networks"])
    # (b) run to run
    assert "## Run to run" in md
    assert "| net-bdyn | sequential | 4.0000 | 5.0000 | 3.0000 | 1.67x |" in md
    assert "| net-bdyn | ios | 2.0000 | 2.2000 | 1.8000 | 1.22x |" in md
    # (c) per layer
    assert "## Per layer: ios against PyTorch" in md
    assert "| net-bdyn | TF32 | 4 of 6 | 2 of 3 (67%) | 2 | 1 | 0.0750 | 0.0440 | b 1x8x16x16 * 8x8x1x1 (3.00x)" in md
    assert "| net-bdyn | FP16 | not joined: ValueError: no ios trace net-bdyn-fp16-layers.json" in md
    assert doc["layers"]["net-bdyn-tf32"]["summary"]["slower_than_2x"] == 2
    bf16 = doc["layers"]["net-bdyn-bf16"]
    assert bf16["trace_file"] == "net-bdyn-bf16-graph.json" and bf16["ios_processes"] == ["sequential"]
    assert {r["name"]: r["ios_ms"] for r in bf16["rows"]}["a"] == pytest.approx(0.010)
    assert len(doc["layers"]["net-bdyn-tf32"]["rows"]) == 6


def test_collect_old_files_only(tmp_path):
    """A kit run of the old set (TF32 batch 1, peers version 1) reads as before."""
    work = tmp_path / "work"
    t = work / "results" / "times"
    write_json(str(t / "sq-bdyn-graph.json"), export([("sequential", 0.5), ("ios", 0.45)]))
    write_json(str(t / "sq-bdyn-plain.json"), export([("sequential", 0.7), ("ios", 0.6)]))
    write_json(str(t / "peers.json"), {
        "format": "ios-peers", "version": 1, "precision": "tf32",
        "results": [{"model": "sq", "mode": "cuda_graph", "batches": {"1": {"summary": {"median_ms": 0.31}}}},
                    {"model": "sq", "mode": "eager", "error": "timed out after 35 s"}]})
    md, doc = collect(tmp_path, work)
    assert "## sq-bdyn" in md
    assert "| sequential | — | 0.5000 | 0.7000 | 0.5500 | 1.00x |" in md
    assert "| PyTorch cuda_graph | — | 0.3100 | — | — | 1.61x |" in md
    assert "| PyTorch eager | — | not run: timed out after 35 s | — | — | — |" in md
    assert "| sq-bdyn | TF32 | 1 | 0.5000 | 0.4500 (ios) | 0.3100 | not run: timed out after 35 s | 0.69x |" in md
    assert "## Run to run" not in md and "## Per layer" not in md
    assert set(doc["networks"]) == {"sq-bdyn"}
