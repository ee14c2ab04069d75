#!/usr/bin/python3
"""Benchmark every ios scheduler on a set of models and write docs/benchmarks.md.

For each model and batch size it runs ios-optimize once per scheduler and
records the search statistics of its JSON report (units, blocks, states,
transitions, stages costed, search time), the wall-clock time of the whole
ios-optimize process (the optimization time) and the predicted latency. On a
machine with a GPU it also
  - optimizes with measured costs (--cost measured): IOS once with an empty
    profile database and once with the filled one (cold and warm times),
  - times all schedules with ios-run, interleaved, with and without CUDA graphs,
  - times the same networks in PyTorch (bench/harness/peers.py: eager with
    cuDNN benchmark mode, a captured CUDA graph, torch.compile default and
    max-autotune) and reports ios's speed-up over each.
Without a GPU it writes the search-side half (latencies predicted by the
simulated cost model) and says, in every GPU column, that the rest needs a GPU.

Outputs: --out (Markdown tables), --charts-dir (PNG charts and results.json
with every number the tables show). Needs matplotlib for the charts
(Debian: python3-matplotlib); without it the tables are still written.

    /usr/bin/python3 bench/harness/run_benchmarks.py                  # defaults, a few minutes
    /usr/bin/python3 bench/harness/run_benchmarks.py --models squeezenet1_1 --batches 1,8
    python3 bench/harness/run_benchmarks.py --bin-dir .devpack/bin     # on a GPU machine
"""

import argparse
import datetime
import glob
import json
import math
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))

DEFAULT_MODELS = ("inception_v3,squeezenet1_1,randwire,nasnet_a_large,deeplabv3_resnet50,"
                  "swin_t,maxvit_t,retinanet_resnet50_fpn,fcos_resnet50_fpn,ssdlite320_mobilenet_v3_large")

# (label in the tables, registry name, --params)
SCHEDULERS = [
    ("sequential", "sequential", ""),
    ("greedy", "greedy", ""),
    ("ios", "ios", ""),
    ("ios-parallel", "ios", "strategy=parallel"),
    ("ios-merge", "ios", "strategy=merge"),
    ("dos", "dos", ""),
    ("lios", "lios", ""),
    ("nimble", "nimble", ""),
]
# The schedulers that search (ios-optimize --time-limit applies to them).
SEARCHING = {"ios", "ios-parallel", "ios-merge", "dos"}
PEER_MODES = [("eager", "PyTorch eager"), ("cuda_graph", "PyTorch + CUDA graph"),
              ("compile_default", "torch.compile"), ("compile_max_autotune", "torch.compile max-autotune")]
NEEDS_GPU = "needs a GPU — not run on this machine"
EXIT_NO_GPU = 3


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- formatting

def md_escape(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def f_ms(v):
    if v is None:
        return "—"
    if v == 0:
        return "0"
    if v < 1:
        return f"{v:.4f}"
    if v < 100:
        return f"{v:.3f}"
    return f"{v:.1f}"


def f_dur_ms(ms):
    """A duration given in ms, in ms below 10 s and in s above."""
    if ms is None:
        return "—"
    if ms < 1:
        return f"{ms:.3f} ms"
    if ms < 10000:
        return f"{ms:.1f} ms"
    return f"{ms / 1000:.1f} s"


def f_s(s):
    return "—" if s is None else (f"{s:.2f} s" if s < 100 else f"{s:.0f} s")


def f_int(v):
    return "—" if v is None else f"{int(v):,}"


def f_ratio(v):
    return "—" if v is None or not math.isfinite(v) else f"{v:.2f}×"


def ratio(a, b):
    return a / b if a is not None and b is not None and b > 0 else None


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- machine

def run_cmd(cmd, timeout=60):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "", str(e)


def machine_info():
    info = {"hostname": platform.node(), "cores": os.cpu_count(), "os": platform.platform()}
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
            info["cpu"] = m.group(1).strip() if m else platform.processor()
    except OSError:
        info["cpu"] = platform.processor() or "unknown"
    try:
        with open("/proc/meminfo") as f:
            m = re.search(r"^MemTotal:\s*(\d+) kB", f.read(), re.M)
            info["memory_gib"] = round(int(m.group(1)) / 2**20, 1) if m else None
    except OSError:
        info["memory_gib"] = None
    try:
        with open("/etc/os-release") as f:
            m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?$', f.read(), re.M)
            if m:
                info["os"] = m.group(1)
    except OSError:
        pass
    rc, out, _ = run_cmd(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    if rc == 0:
        info["commit"] = out.strip()
        rc, out, _ = run_cmd(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"])
        info["commit_dirty"] = rc == 0 and bool(out.strip())
    return info


def gpu_info():
    """What nvidia-smi and nvcc say; {} when there is no nvidia-smi or no GPU."""
    info = {}
    rc, out, _ = run_cmd(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                          "--format=csv,noheader"])
    if rc != 0 or not out.strip():
        return info
    name, driver, mem = [s.strip() for s in out.strip().splitlines()[0].split(",")][:3]
    info.update({"name": name, "driver": driver, "memory": mem})
    rc, out, _ = run_cmd(["nvidia-smi"])
    m = re.search(r"CUDA Version:\s*([\d.]+)", out or "")
    if m:
        info["cuda_driver_api"] = m.group(1)
    for nvcc in ("nvcc", "/usr/local/cuda/bin/nvcc"):
        rc, out, _ = run_cmd([nvcc, "--version"])
        m = re.search(r"release ([\d.]+)", out or "")
        if rc == 0 and m:
            info["cuda_toolkit"] = m.group(1)
            break
    return info


# ----------------------------------------------------------------------------- ios tools

def resolve_model(models_dir, name):
    """(label, path) of a registry name or an .onnx path; path None if absent."""
    if name.endswith(".onnx"):
        return os.path.basename(name)[:-5], (name if os.path.isfile(name) else None)
    for suffix in ("-bdyn.onnx", ".onnx"):
        path = os.path.join(models_dir, name + suffix)
        if os.path.isfile(path):
            return name, path
    # Models the tests use at a reduced input size only (NAME-bdyn-HxW.onnx,
    # or NAME-HxW.onnx with a static batch of 1).
    for pattern in ("-bdyn-*x*.onnx", "-[0-9]*x[0-9]*.onnx"):
        reduced = sorted(p for p in glob.glob(os.path.join(glob.escape(models_dir), name + pattern))
                         if re.fullmatch(re.escape(name) + r"(-bdyn)?-\d+x\d+\.onnx", os.path.basename(p)))
        if reduced:
            return name, reduced[0]
    return name, None


def error_text(rc, stderr, timeout=None):
    if rc is None and timeout:
        return f"timed out after {timeout:.0f} s"
    lines = [l for l in (stderr or "").strip().splitlines() if l.strip()]
    tail = lines[-1] if lines else "no message"
    return f"exit {rc}: {tail}"[:400]


def optimize(args, model_path, batch, scheduler, params, out_base, cost_args):
    """One ios-optimize run. Returns a dict: report fields, wall_s, error."""
    schedule = out_base + ".schedule.json"
    report = out_base + ".report.json"
    cmd = [args.ios_optimize, model_path, "--batch", str(batch), "--scheduler", scheduler,
           "-o", schedule, "--report-json", report, "-q"] + cost_args
    if params:
        cmd += ["--params", params]
    if args.max_block_units:
        cmd += ["--max-block-units", str(args.max_block_units)]
    # ios-optimize refuses --time-limit for the schedulers that do not search.
    if args.time_limit is not None and scheduler in SEARCHING:
        cmd += ["--time-limit", f"{args.time_limit:g}"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.optimize_timeout)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = None, ""
    wall = time.perf_counter() - t0
    result = {"wall_s": wall, "command": shlex.join(cmd)}
    if rc != 0:
        result["error"] = error_text(rc, err, args.optimize_timeout)
        return result
    with open(report) as f:
        result["report"] = json.load(f)
    with open(schedule) as f:
        result["device"] = json.load(f).get("device", {})
    result["schedule_file"] = schedule
    return result


def ios_run(args, model_path, batch, schedules, times_path, graph=True):
    """Times `schedules` (list of paths) interleaved; {path: summary} or an error."""
    cmd = [args.ios_run, model_path] + schedules + [
        "--batch", str(batch), "--iterations", str(args.iterations), "--warmup", str(args.warmup),
        "--export-times", times_path, "-q"]
    if not graph:
        cmd.append("--no-cuda-graph")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.run_timeout)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = None, ""
    if rc != 0:
        return None, error_text(rc, err, args.run_timeout)
    with open(times_path) as f:
        doc = json.load(f)
    by_file = {}
    for run in doc.get("runs", []):
        by_file[os.path.abspath(run.get("schedule_file", ""))] = dict(run["summary"], device=run.get("device"))
    return by_file, None


def time_schedules(args, model_path, batch, rows, work, tag, graph):
    """Fills row['measured' + tag] for every row with a schedule: all at once,
    then one by one for the schedules of a run that failed."""
    key = "measured" if graph else "measured_nograph"
    ok_rows = [r for r in rows if "schedule_file" in r]
    if not ok_rows:
        return
    files = [os.path.abspath(r["schedule_file"]) for r in ok_rows]
    by_file, err = ios_run(args, model_path, batch, files, os.path.join(work, f"{tag}.times.json"), graph)
    if by_file is None:
        log(f"    ios-run ({'graph' if graph else 'no graph'}) failed for the set ({err}); one by one")
        for r, path in zip(ok_rows, files):
            one, e = ios_run(args, model_path, batch, [path],
                             os.path.join(work, f"{tag}.{r['label']}.times.json"), graph)
            r[key] = one.get(path) if one else {"error": e}
        return
    for r, path in zip(ok_rows, files):
        r[key] = by_file.get(path, {"error": "missing from ios-run's export"})


# ----------------------------------------------------------------------------- the run

def detect_gpu(args, probe_model):
    """(usable by ios-run, note, nvidia-smi info)."""
    smi = gpu_info()
    if args.gpu == "off":
        return False, "GPU part switched off (--gpu off)", smi
    if not os.path.isfile(args.ios_run):
        return False, f"{os.path.relpath(args.ios_run, REPO)} not found", smi
    if probe_model is None:
        return False, "no model file to probe ios-run with", smi
    rc, _, err = run_cmd([args.ios_run, probe_model, "--batch", "1", "--iterations", "1", "--warmup", "0", "-q"],
                         timeout=600)
    if rc == 0:
        return True, "ios-run ran a model on the GPU", smi
    if rc == EXIT_NO_GPU:
        why = "ios-run exits 3 (no usable CUDA device)"
        if smi:
            why += f", although nvidia-smi lists {smi['name']}: is this ios-run built with CUDA?"
        return False, why, smi
    return False, f"ios-run probe failed: {error_text(rc, err)}", smi


def bench_model(args, label, path, batch, gpu, work):
    """Every scheduler on one model and batch; returns the case dict."""
    case = {"model": label, "model_file": os.path.relpath(path, REPO), "batch": batch, "rows": []}
    mwork = os.path.join(work, f"{label}-b{batch}")
    os.makedirs(mwork, exist_ok=True)
    if gpu:
        db = os.path.join(mwork, "profile.sqlite")
        cost = ["--cost", "measured", "--profile-db", db]
        # IOS with an empty profile database, then again with the filled one.
        cold = optimize(args, path, batch, "ios", "", os.path.join(mwork, "ios-cold"), cost)
        case["ios_cold"] = {k: cold.get(k) for k in ("wall_s", "error")}
        if "report" in cold:
            case["ios_cold"]["search_ms"] = cold["report"]["search_ms"]
            case["ios_cold"]["stages_costed"] = cold["report"]["stages_costed"]
        log(f"  {label} b{batch} ios (cold profile db): {cold['wall_s']:.1f} s {cold.get('error', '')}")
    else:
        cost = ["--cost", "simulated", "--device-profile", args.device_profile]
    for sched_label, name, params in args.scheduler_list:
        r = optimize(args, path, batch, name, params, os.path.join(mwork, sched_label), cost)
        r["label"] = sched_label
        r["params"] = params
        case["rows"].append(r)
        rep = r.get("report")
        log(f"  {label} b{batch} {sched_label:<13} {r['wall_s']:6.1f} s  "
            + (f"predicted {rep['predicted_latency_ms']:.4f} ms, search {rep['search_ms']:.1f} ms"
               if rep else r["error"]))
    if gpu:
        case["ios_warm"] = next(({"wall_s": r["wall_s"], "error": r.get("error")}
                                 for r in case["rows"] if r["label"] == "ios"), None)
        time_schedules(args, path, batch, case["rows"], mwork, "run", graph=True)
        time_schedules(args, path, batch, case["rows"], mwork, "run-nograph", graph=False)
    return case


def widest_blocks(case):
    """The blocks of greatest width, with their latency under the sequential
    and the ios schedule (both reports split the model into the same blocks)."""
    by = {r.get("label"): (r.get("report") or {}).get("blocks") for r in case.get("rows", [])}
    seq, ios = by.get("sequential"), by.get("ios")
    if not seq or not ios or len(seq) != len(ios):
        return []
    top = max(b["width"] for b in ios)
    return [{"index": b["index"], "first_unit": b.get("first_unit", ""), "units": b["units"], "width": b["width"],
             "sequential_ms": s.get("predicted_ms"), "ios_ms": b.get("predicted_ms")}
            for s, b in zip(seq, ios) if b["width"] == top and top > 1]


def run_peers(args, models, batches, work):
    if args.peers_json:
        with open(args.peers_json) as f:
            return json.load(f), None
    if args.no_peers:
        return None, "switched off (--no-peers)"
    out = os.path.join(work, "peers.json")
    cmd = [args.python, os.path.join(HERE, "peers.py"), "--models", ",".join(models),
           "--batches", ",".join(map(str, batches)), "--models-dir", args.models_dir,
           "--iterations", str(args.iterations), "--warmup", str(args.warmup),
           "--precision", "tf32", "--mode-timeout", str(args.peer_timeout), "--out", out]
    if args.randwire_graphs:
        cmd += ["--randwire-graphs", args.randwire_graphs]
    log("peers: " + shlex.join(cmd))
    p = subprocess.run(cmd, text=True, stdout=sys.stderr, stderr=subprocess.PIPE)
    if os.path.isfile(out):
        with open(out) as f:
            return json.load(f), None if p.returncode == 0 else error_text(p.returncode, p.stderr)
    return None, error_text(p.returncode, p.stderr)


def peer_table(peers):
    """{(model, batch): {mode: summary or {'error'}}}"""
    t = {}
    if not peers:
        return t
    for res in peers.get("results", []):
        for b, entry in res.get("batches", {}).items():
            t.setdefault((res["model"], int(b)), {})[res["mode"]] = entry
        if "error" in res:  # the whole mode failed: every batch of the model shows it
            t.setdefault((res["model"], None), {})[res["mode"]] = {"error": res["error"]}
    return t


def peer_entry(ptable, model, batch, mode):
    return ptable.get((model, batch), {}).get(mode) or ptable.get((model, None), {}).get(mode)


# ----------------------------------------------------------------------------- Markdown

METHOD_COMMON = """\
- **Optimization time** is the wall-clock time of one `ios-optimize` process,
  measured by the harness around the process: ONNX import, unit formation,
  cost model, search and writing the schedule (and, with measured costs, the
  profiling of every stage the search asks about). **Search time** is the
  scheduler's own time as `ios-optimize --report-json` reports it (the sum
  over blocks); **transitions** and **stages costed** are its counters (the
  DP's edges and the distinct stages whose latency it asked the cost model
  for). They are summed over blocks.
- **Predicted latency** is the latency of the schedule found as
  `ios-optimize` reports it; the **predicted speed-up** divides the
  sequential schedule's predicted latency under the same cost model by it.
  With the simulated cost model every scheduler's prediction is the GPU
  simulator's latency of its whole lowered plan (`docs/cost-model.md`):
  contention between concurrent kernels, launch overheads and every event
  wait included, for the staged schedulers (the sum of their stages) and the
  streamed ones (`lios`, `nimble`) alike, so the predictions compare all
  schedulers by one model. They are estimates of a GPU, not measurements.
  With measured costs a staged schedule's prediction is the sum of its
  measured stages and a streamed one's its scheduler's own estimate over
  measured unit latencies; only measured latencies compare all schedulers on
  equal terms there.
- Schedulers: `sequential`, `greedy`, `ios` (r=3, s=8, concurrent stages and
  operator merge), `ios-parallel` and `ios-merge` (`ios --params
  strategy=parallel` / `strategy=merge`), `dos`, `lios`, `nimble`, each with
  its default parameters (`ios-optimize --list-schedulers`).
- Each `ios-optimize` run is limited to {timeout:.0f} s (`--optimize-timeout`);
  a run that takes longer is reported as timed out, not as a result.
"""

METHOD_GPU = """\
- **Measured latency**: `ios-run` executes every schedule of a model on the
  GPU, interleaved (rounds of iterations, each schedule in turn, so drift
  affects all alike), with {warmup} warm-up and {iterations} timed iterations
  each. An iteration is timed with CUDA events recorded on the engine's first
  stream before and after one forward pass, then synchronized. The table
  gives the median and the 99th percentile (nearest rank, as trtexec);
  speed-ups divide medians. Inputs are seeded random tensors already on the
  GPU (uniform in ios-run, N(0,1) in PyTorch; dense FP32 kernels do the same
  work for any values); host transfers are not timed. Schedules run as captured CUDA graphs
  unless the column says "no CUDA graph" (`--no-cuda-graph`). Convolutions
  may use TF32 tensor cores (ios-run's default `--precision tf32`).
- The optimization on the GPU uses measured costs (`--cost measured`): IOS
  first with an empty profile database (**cold**), then again with the
  database it filled (**warm**); the other schedulers then reuse that
  database. Their predicted latencies are built from measured stage
  latencies.
- **PyTorch peers** (`bench/harness/peers.py`): the same networks, built by
  `onnx_models/export_models.py`'s registry with the same seed, weights and
  input size as the ONNX files ios runs, the same batch, timed the same way
  (CUDA events around one forward pass, synchronized, {warmup} warm-up and
  {iterations} timed iterations, median): eager with
  `torch.backends.cudnn.benchmark = True`; the eager forward captured in a
  `torch.cuda.CUDAGraph` and replayed; `torch.compile(mode="default")` and
  `mode="max-autotune"` (`dynamic=False`; compilation and autotuning happen
  before the warm-up and are not timed). TF32 as in ios:
  `torch.backends.cudnn.allow_tf32 = True` (convolutions),
  `torch.backends.cuda.matmul.allow_tf32 = True` (matrix products, which
  ios runs on cuBLASLt in TF32).
  PyTorch eager runs batch normalization as its own kernels where ios folds
  it into the convolution; that is part of what is compared. Each model and
  mode runs in its own process with a time limit; a failure is reported in
  its cell.
- **Headline ratios** are ios's speed-ups: the peer's median latency divided
  by the `ios` schedule's median latency (CUDA graph on). Above 1 means ios
  is faster.
"""

METHOD_CPU = """\
- Latencies are **predicted** by the simulated cost model (`--cost
  simulated`, device profile `{profile}`): an analytical model of the GPU,
  deterministic, described in `docs/cost-model.md`. No GPU was used, so the
  measured latencies, the measured-cost optimization times and the PyTorch
  comparison are not in this run: they need a GPU and were not run on this
  machine. Run the same command on a machine with an NVIDIA GPU and a CUDA
  build of ios to fill them in.
"""


def write_markdown(args, doc, path, charts):
    gpu = doc["gpu"]["used"]
    m = doc["machine"]
    L = []
    L.append("# Benchmarks\n")
    L.append("<!-- Written by bench/harness/run_benchmarks.py: change the script and run it again "
             "rather than editing this file. -->\n")
    commit = m.get("commit", "unknown") + (" with local changes" if m.get("commit_dirty") else "")
    L.append(f"- **Date**: {doc['date']}")
    L.append(f"- **Machine**: {m.get('cpu')}, {m.get('cores')} cores, "
             f"{m.get('memory_gib')} GiB memory, {m.get('os')}")
    L.append(f"- **ios**: commit {commit}")
    g = doc["gpu"]
    if gpu:
        smi = g.get("nvidia_smi", {})
        ios_dev = g.get("ios_device", {})
        L.append(f"- **GPU**: {smi.get('name') or ios_dev.get('name')}, {smi.get('memory', '')}; "
                 f"driver {smi.get('driver') or ios_dev.get('driver') or '?'}; "
                 f"CUDA {smi.get('cuda_driver_api', '?')} (driver API), "
                 f"toolkit {smi.get('cuda_toolkit', '?')}; "
                 f"cuDNN {ios_dev.get('cudnn') or '?'} (ios), "
                 f"compute capability {ios_dev.get('compute_capability') or '?'}")
        pv = (doc.get("peers") or {}).get("versions") or {}
        if pv:
            L.append(f"- **PyTorch**: {pv.get('torch')} (CUDA {pv.get('torch_cuda')}, cuDNN {pv.get('cudnn')}), "
                     f"torchvision {pv.get('torchvision')}, Triton {pv.get('triton')}, Python {pv.get('python')}")
    else:
        L.append(f"- **GPU**: none used ({g['note']}). The GPU half of this benchmark "
                 f"{NEEDS_GPU}.")
    L.append(f"- **Command**: `{doc['command']}` ({doc['run_time_s']:.0f} s)")
    L.append("")

    # Headline
    L.append("## Summary\n")
    if gpu:
        L.append("ios's speed-up (median latency, CUDA graph on, the `ios` schedule) over each "
                 "alternative; above 1× means ios is faster.\n")
    else:
        L.append("Predicted by the simulated cost model (no GPU on this machine): the `ios` "
                 "schedule's speed-up over the sequential and greedy schedules, and the time "
                 "the search took.\n")
    header = ["model", "batch", "units", "ios predicted", "vs sequential (pred.)", "vs greedy (pred.)",
              "ios search", "ios optimization"]
    if gpu:
        header += ["ios measured", "vs sequential", "vs greedy"] + [f"vs {t}" for _, t in PEER_MODES]
    else:
        header += ["measured vs sequential / greedy / PyTorch"]
    rows = []
    ptab = peer_table(doc.get("peers"))
    for case in doc["cases"]:
        if "error" in case:
            rows.append([case["model"], case["batch"], case["error"]] + ["—"] * (len(header) - 3))
            continue
        by = {r["label"]: r for r in case["rows"]}
        ios = by.get("ios", {})
        rep = ios.get("report")
        gr = (by.get("greedy") or {}).get("report")
        units = next((r["report"]["units"] for r in case["rows"] if "report" in r), None)
        if rep:
            row = [case["model"], case["batch"], f_int(units), f_ms(rep["predicted_latency_ms"]) + " ms",
                   f_ratio(ratio(rep["sequential_predicted_ms"], rep["predicted_latency_ms"])),
                   f_ratio(ratio(gr["predicted_latency_ms"] if gr else None, rep["predicted_latency_ms"])),
                   f_dur_ms(rep["search_ms"]),
                   f"{f_s((case.get('ios_cold') or {}).get('wall_s'))} cold / {f_s(ios['wall_s'])} warm"
                   if gpu else f_s(ios["wall_s"])]
        else:
            row = [case["model"], case["batch"], f_int(units), ios.get("error", "not run"), "—", "—", "—",
                   f_s(ios.get("wall_s"))]
        if gpu:
            mi = (ios.get("measured") or {}).get("median_ms")
            ms = ((by.get("sequential") or {}).get("measured") or {}).get("median_ms")
            mg = ((by.get("greedy") or {}).get("measured") or {}).get("median_ms")
            row += [f_ms(mi) + " ms" if mi else (ios.get("measured") or {}).get("error", "—"),
                    f_ratio(ratio(ms, mi)), f_ratio(ratio(mg, mi))]
            for mode, _ in PEER_MODES:
                e = peer_entry(ptab, case["model"], case["batch"], mode)
                if e and "summary" in e:
                    row.append(f_ratio(ratio(e["summary"]["median_ms"], mi)))
                else:
                    row.append((e or {}).get("error", doc.get("peers_error") or "not run"))
        else:
            row.append(NEEDS_GPU)
        rows.append(row)
    L.append(table(header, rows))

    # Method
    L.append("## Method\n")
    L.append(METHOD_COMMON.format(timeout=args.optimize_timeout))
    if gpu:
        L.append(METHOD_GPU.format(warmup=args.warmup, iterations=args.iterations))
    else:
        L.append(METHOD_CPU.format(profile=args.device_profile))
        L.append("On a machine with a GPU the same command also measures (not done here):\n")
        L.append(METHOD_GPU.format(warmup=args.warmup, iterations=args.iterations))
    res_rel = os.path.relpath(os.path.join(args.charts_dir, "results.json"), os.path.dirname(path))
    L.append(f"- Every number below is also in [`{os.path.basename(res_rel)}`]({res_rel}).\n")

    # Charts
    if charts.get("files"):
        L.append("## Charts\n")
        rel = os.path.relpath(args.charts_dir, os.path.dirname(os.path.abspath(path)))
        for title, f in charts["files"]:
            L.append(f"![{title}]({rel}/{os.path.basename(f)})\n")
    elif charts.get("note"):
        L.append(f"## Charts\n\n{charts['note']}\n")

    # Per model
    L.append("## Per model\n")
    for case in doc["cases"]:
        L.append(f"### {case['model']}, batch {case['batch']}\n")
        if "error" in case:
            L.append(case["error"] + "\n")
            continue
        L.append(f"Model file `{case['model_file']}`; "
                 + ("costs measured on the GPU." if gpu else
                    f"costs predicted by the simulated model (`{args.device_profile}` profile).") + "\n")
        by = {r["label"]: r for r in case["rows"]}
        seq_pred = ((by.get("sequential") or {}).get("report") or {}).get("predicted_latency_ms")
        seq_meas = ((by.get("sequential") or {}).get("measured") or {}).get("median_ms")
        gr_meas = ((by.get("greedy") or {}).get("measured") or {}).get("median_ms")
        header = ["scheduler", "units", "blocks", "stages", "transitions", "stages costed", "search time",
                  "optimization time", "predicted latency (ms)", "predicted speed-up vs sequential"]
        if gpu:
            header += ["measured median (ms)", "p99 (ms)", "speed-up vs sequential", "vs greedy",
                       "median, no CUDA graph (ms)"]
        else:
            header += ["measured latency"]
        rows = []
        for r in case["rows"]:
            rep = r.get("report")
            if not rep:
                rows.append([r["label"], r["error"]] + ["—"] * (len(header) - 2))
                continue
            stages = rep.get("stages") or "—"
            row = [r["label"], f_int(rep["units"]), f_int(rep["block_count"]), stages,
                   f_int(rep["transitions"]), f_int(rep["stages_costed"]), f_dur_ms(rep["search_ms"]),
                   f_s(r["wall_s"]), f_ms(rep["predicted_latency_ms"]),
                   f_ratio(ratio(rep["sequential_predicted_ms"] or seq_pred, rep["predicted_latency_ms"]))]
            if gpu:
                meas = r.get("measured") or {}
                ng = r.get("measured_nograph") or {}
                if "median_ms" in meas:
                    row += [f_ms(meas["median_ms"]), f_ms(meas["p99_ms"]),
                            f_ratio(ratio(seq_meas, meas["median_ms"])), f_ratio(ratio(gr_meas, meas["median_ms"]))]
                else:
                    row += [meas.get("error", "not run"), "—", "—", "—"]
                row.append(f_ms(ng["median_ms"]) if "median_ms" in ng else ng.get("error", "not run"))
            else:
                row.append(NEEDS_GPU)
            rows.append(row)
        L.append(table(header, rows))
        if gpu:
            cold, warm = case.get("ios_cold") or {}, case.get("ios_warm") or {}
            L.append(f"IOS optimization with measured costs: {f_s(cold.get('wall_s'))} with an empty profile "
                     f"database{' (' + cold['error'] + ')' if cold.get('error') else ''}, "
                     f"{f_s(warm.get('wall_s'))} with the filled one"
                     f"{' (' + warm['error'] + ')' if warm.get('error') else ''}.\n")
            prow = []
            mi = ((by.get("ios") or {}).get("measured") or {}).get("median_ms")
            for mode, title in PEER_MODES:
                e = peer_entry(ptab, case["model"], case["batch"], mode)
                if e and "summary" in e:
                    s = e["summary"]
                    prow.append([title, f_ms(s["median_ms"]), f_ms(s["p99_ms"]), f_ratio(ratio(s["median_ms"], mi)),
                                 f_s(e.get("prepare_s"))])
                else:
                    prow.append([title, (e or {}).get("error", doc.get("peers_error") or "not run"), "—", "—", "—"])
            L.append("PyTorch on the same GPU, same network, batch and input size:\n")
            L.append(table(["peer", "median (ms)", "p99 (ms)", "ios speed-up", "preparation (capture/compile)"],
                           prow))
        ios = by.get("ios") or {}
        rep = ios.get("report")
        if rep and rep.get("blocks"):
            L.append("<details><summary>Per block, the <code>ios</code> schedule "
                     f"({len(rep['blocks'])} blocks)</summary>\n")
            brows = []
            for b in rep["blocks"]:
                brows.append([b["index"], b.get("first_unit", ""), b["units"], b["width"], f_int(b.get("states")),
                              f_int(b.get("transitions")), f_int(b.get("stages_costed")),
                              f_dur_ms(b.get("search_ms")), f_ms(b.get("predicted_ms")),
                              "yes" if b.get("split_by_cap") else ""])
            L.append(table(["block", "first unit", "n", "width", "states", "transitions", "stages costed",
                            "search time", "predicted (ms)", "split by size cap"], brows))
            L.append("</details>\n")

    # Widest blocks
    wide = [(case, b) for case in doc["cases"] for b in case.get("wide_blocks", [])]
    if wide:
        L.append("## Widest blocks\n")
        L.append("Each model's widest block (most units side by side: an Inception module, DeepLabV3's "
                 "ASPP head, a detector's heads on five pyramid levels), with the block's latency under the `sequential` and the `ios` schedule and "
                 "the speed-up on that block alone. "
                 + ("Measured per stage on the GPU." if gpu else
                    f"Predicted by the simulated cost model (`{args.device_profile}` profile), not measured.")
                 + "\n")
        shown = {}
        rows = []
        for c, b in wide:  # at most three blocks a case: SqueezeNet has eight Fire modules alike
            key = (c["model"], c["batch"])
            shown[key] = shown.get(key, 0) + 1
            if shown[key] <= 3:
                rows.append([c["model"], c["batch"], b["index"], b["first_unit"], b["units"], b["width"],
                             f_ms(b["sequential_ms"]), f_ms(b["ios_ms"]), f_ratio(ratio(b["sequential_ms"], b["ios_ms"]))])
        for (model, batch), count in shown.items():
            if count > 3:
                rows.append([model, batch, f"and {count - 3} more of this width", "", "", "", "", "", ""])
        L.append(table(["model", "batch", "block", "first unit", "n", "width", "sequential (ms)", "ios (ms)",
                        "ios speed-up on the block"], rows))

    # The widest blocks of the test networks written outside torchvision
    # (by hand from ios-optimize --analyze), what a GPU measured (the GPU
    # kit's results, written by hand from scripts/gpu/first-run.sh's
    # bench.md), scaling, forms, memory, precision and the measured search:
    # written separately by bench/scaling.py (minutes of CPU per row),
    # bench/search_time.py, bench/forms.py, bench/memory.py, bench/precision.py,
    # bench/families_nd.py and bench/measured_search.py, carried over
    # verbatim.
    for section in ("outside_torchvision.md", "families_nd.md", "measured_gpu.md", "scaling.md", "search_time.md",
                    "forms.md", "memory.md", "precision.md", "measured_search.md"):
        section_path = os.path.join(REPO, "docs", "benchmarks", section)
        if os.path.exists(section_path):
            with open(section_path) as f:
                L.append(f.read().rstrip() + "\n")

    # Failures
    fails = doc["failures"]
    L.append("## Failures\n")
    if fails:
        L += [f"- {md_escape(f)}" for f in fails]
        L.append("")
    else:
        L.append("None.\n")
    text = "\n".join(L).rstrip() + "\n"
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- charts

def label_log_axis(ax):
    """Plain numbers at 1, 2 and 5 times powers of ten: a log axis that spans
    less than two decades otherwise shows a single label."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    def fmt(v, _):
        mant = v / 10 ** math.floor(math.log10(v)) if v > 0 else 0
        return f"{v:g}" if any(abs(mant - m) < 1e-6 for m in (1, 2, 5)) else ""
    ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(fmt))
    ax.yaxis.set_minor_formatter(FuncFormatter(fmt))


def draw_charts(args, doc):
    """PNG charts into --charts-dir; returns {'files': [(title, path)]} or {'note'}."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        msg = ("matplotlib is not installed, so no charts were drawn (Debian: apt-get install "
               "python3-matplotlib); the tables are complete.")
        log("run_benchmarks: " + msg)
        return {"note": msg}
    gpu = doc["gpu"]["used"]
    os.makedirs(args.charts_dir, exist_ok=True)
    for f in os.listdir(args.charts_dir):  # drop charts of batch sizes not in this run
        if re.fullmatch(r"(latency|search_time)_b\d+\.png", f):
            os.remove(os.path.join(args.charts_dir, f))
    files = []
    labels = [s[0] for s in args.scheduler_list]
    colors = plt.get_cmap("tab10")
    ptab = peer_table(doc.get("peers"))
    for batch in args.batch_list:
        cases = [c for c in doc["cases"] if c["batch"] == batch and "rows" in c]
        if not cases:
            continue
        # Latency per scheduler, one panel per model (latencies differ by model).
        n = len(cases)
        ncols = min(n, 2)
        nrows = math.ceil(n / ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(7.5 * ncols, 4.6 * nrows), squeeze=False)
        for ax, case in zip(axes.flat, cases):
            by = {r["label"]: r for r in case["rows"]}
            names = list(labels)
            pred = [((by.get(l) or {}).get("report") or {}).get("predicted_latency_ms") for l in names]
            meas = [((by.get(l) or {}).get("measured") or {}).get("median_ms") for l in names]
            # What to write on a bar that is missing: the optimization or the run failed.
            errs = []
            for l in names:
                r = by.get(l) or {}
                if "report" not in r:
                    errs.append(r.get("error", "failed"))
                elif gpu and "median_ms" not in (r.get("measured") or {}):
                    errs.append((r.get("measured") or {}).get("error", "failed"))
                else:
                    errs.append(None)
            if gpu:
                for mode, title in PEER_MODES:
                    e = peer_entry(ptab, case["model"], batch, mode)
                    names.append(title.replace("PyTorch ", "PT ").replace("torch.compile", "compile"))
                    pred.append(None)
                    meas.append(e["summary"]["median_ms"] if e and "summary" in e else None)
                    errs.append(None if e and "summary" in e else (e or {}).get("error", "not run"))
            n_ios = len(labels)
            x = list(range(len(names)))
            w = 0.4 if gpu else 0.7
            px = [i - w / 2 for i in x] if gpu else x
            bars = ax.bar(px, [v or 0 for v in pred], w, color=colors(0), alpha=0.55 if gpu else 0.9,
                          label="predicted" + (" (measured costs)" if gpu else f" (simulated {args.device_profile})"))
            for b, v in zip(bars, pred):
                if v:
                    ax.annotate(f"{v:.3g}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom",
                                fontsize=7, xytext=(0, 1), textcoords="offset points")
            if gpu:
                mb = ax.bar([i + w / 2 for i in x[:n_ios]], [v or 0 for v in meas[:n_ios]], w, color=colors(1),
                            label="ios measured median")
                mb = list(mb) + list(ax.bar(x[n_ios:], [v or 0 for v in meas[n_ios:]], w, color=colors(2),
                                            label="PyTorch measured median"))
                for b, v in zip(mb, meas):
                    if v:
                        ax.annotate(f"{v:.3g}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom",
                                    fontsize=7, xytext=(0, 1), textcoords="offset points")
            for i, err in enumerate(errs):
                if err:
                    ax.annotate("timed out" if "timed out" in err else ("not run" if err == "not run" else "failed"),
                                (i, 0), ha="center", va="bottom", rotation=90, fontsize=8, color="firebrick",
                                xytext=(0, 3), textcoords="offset points")
            ax.set_xticks(x)
            ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
            ax.set_ylabel("latency (ms)")
            ax.set_title(f"{case['model']}, batch {batch}", fontsize=10)
            ax.grid(axis="y", alpha=0.3)
            ax.legend(fontsize=8)
        for ax in list(axes.flat)[n:]:
            ax.axis("off")
        what = "Predicted and measured" if gpu else "Predicted"
        fig.suptitle(f"{what} latency per scheduler, batch {batch}"
                     + ("" if gpu else f" (simulated {args.device_profile}, no GPU)"), fontsize=12)
        fig.tight_layout()
        out = os.path.join(args.charts_dir, f"latency_b{batch}.png")
        fig.savefig(out, dpi=110)
        plt.close(fig)
        files.append((f"{what} latency per scheduler, batch {batch}", out))

        # Search time and optimization time per model, grouped by scheduler (log scale).
        fig, axes = plt.subplots(1, 2, figsize=(15, 4.8))
        models = [c["model"] for c in cases]
        nb = len(labels)
        w = 0.8 / nb
        for k, (key, title, unit) in enumerate([("search", "Search time (scheduler only)", "ms"),
                                                ("wall", "Optimization time (whole ios-optimize run)", "s")]):
            ax = axes[k]
            for j, l in enumerate(labels):
                vals, timed_out = [], []
                for c in cases:
                    r = next((r for r in c["rows"] if r["label"] == l), None)
                    if r is None:
                        vals.append(None)
                        timed_out.append(False)
                    elif "report" in r:
                        vals.append(r["report"]["search_ms"] if key == "search" else r["wall_s"])
                        timed_out.append(False)
                    else:
                        to = "timed out" in r.get("error", "")
                        vals.append((args.optimize_timeout * (1000 if key == "search" else 1)) if to else None)
                        timed_out.append(to)
                xs = [i - 0.4 + w * (j + 0.5) for i in range(len(cases))]
                ax.bar(xs, [max(v, 1e-3) if v and not to else 0 for v, to in zip(vals, timed_out)], w,
                       color=colors(j % 10), label=l)
                for xx, v, to in zip(xs, vals, timed_out):
                    if to:
                        ax.bar([xx], [v], w, color="white", edgecolor=colors(j % 10), hatch="///")
                        ax.annotate("timeout", (xx, v), ha="center", va="bottom", rotation=90, fontsize=6,
                                    xytext=(0, 2), textcoords="offset points")
            ax.set_yscale("log")
            lo, hi = ax.get_ylim()
            ax.set_ylim(lo, hi * 3)  # room for the value labels above the tallest bars
            label_log_axis(ax)
            ax.set_xticks(range(len(cases)))
            ax.set_xticklabels(models, fontsize=9)
            ax.set_ylabel(unit + " (log scale)")
            ax.set_title(title, fontsize=10)
            ax.grid(axis="y", alpha=0.3, which="both")
        axes[0].legend(fontsize=8, ncol=2)
        fig.suptitle(f"Search and optimization time per model, batch {batch}"
                     + (" (measured costs)" if gpu else " (simulated costs)"), fontsize=12)
        fig.tight_layout()
        out = os.path.join(args.charts_dir, f"search_time_b{batch}.png")
        fig.savefig(out, dpi=110)
        plt.close(fig)
        files.append((f"Search and optimization time per model, batch {batch}", out))
    return {"files": files}


# ----------------------------------------------------------------------------- main

def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--models", default=DEFAULT_MODELS,
                    help="comma-separated model names (files NAME-bdyn.onnx or NAME.onnx in --models-dir) "
                         "or .onnx paths (default: %(default)s)")
    ap.add_argument("--batches", default=None, help="comma-separated batch sizes (default: 1; 1,16 with a GPU)")
    ap.add_argument("--schedulers", default=",".join(s[0] for s in SCHEDULERS),
                    help="subset of: %(default)s")
    ap.add_argument("--bin-dir", default=os.path.join(REPO, "build", "apps"),
                    help="folder with ios-optimize and ios-run (default: build/apps)")
    ap.add_argument("--models-dir", default=os.path.join(REPO, "onnx_models", "generated"),
                    help="folder with the ONNX models (default: onnx_models/generated)")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "benchmarks.md"),
                    help="Markdown report (default: docs/benchmarks.md)")
    ap.add_argument("--charts-dir", default=os.path.join(REPO, "docs", "benchmarks"),
                    help="PNG charts and results.json (default: docs/benchmarks)")
    ap.add_argument("--gpu", choices=["auto", "off"], default="auto",
                    help="auto: use the GPU when ios-run can; off: the search-side half only")
    ap.add_argument("--iterations", type=int, default=200, help="timed iterations on the GPU (default: %(default)s)")
    ap.add_argument("--warmup", type=int, default=20, help="warm-up iterations on the GPU (default: %(default)s)")
    ap.add_argument("--device-profile", default="h100",
                    help="simulated device without a GPU (default: %(default)s)")
    ap.add_argument("--optimize-timeout", type=float, default=None,
                    help="seconds one ios-optimize run may take (default: 60 without a GPU, "
                         "600 with one, where profiling stages takes most of the time)")
    ap.add_argument("--max-block-units", type=int, default=None,
                    help="passed to ios-optimize (default: ios-optimize's own)")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="passed to ios-optimize for the searching schedulers: seconds of search, "
                         "0 = no limit (default: ios-optimize's own)")
    ap.add_argument("--run-timeout", type=float, default=600.0,
                    help="seconds one ios-run invocation may take (default: %(default)s)")
    ap.add_argument("--peer-timeout", type=float, default=900.0,
                    help="seconds for one model in one PyTorch mode (default: %(default)s)")
    ap.add_argument("--no-peers", action="store_true", help="on a GPU, skip the PyTorch peers")
    ap.add_argument("--peers-json", help="merge this peers.py output instead of running peers.py")
    ap.add_argument("--randwire-graphs",
                    help="RandWire graph folder for peers.py (default: export_models.py's); it must be the "
                         "one the ONNX file was exported with, which peers.py checks")
    ap.add_argument("--python", default=sys.executable,
                    help="Python with torch for peers.py (default: this one, %(default)s)")
    ap.add_argument("--work-dir", help="keep schedules, reports and timings here (default: a temporary folder)")
    args = ap.parse_args(argv)

    known = {s[0]: s for s in SCHEDULERS}
    wanted = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    bad = [s for s in wanted if s not in known]
    if bad:
        ap.error(f"unknown scheduler(s) {', '.join(bad)}; known: {', '.join(known)}")
    args.scheduler_list = [known[s] for s in wanted]
    if "sequential" not in wanted:
        ap.error("--schedulers must include sequential (the reference of every speed-up)")
    if args.iterations < 1 or args.warmup < 0:
        ap.error("--iterations must be >= 1 and --warmup >= 0")
    args.ios_optimize = os.path.abspath(os.path.join(args.bin_dir, "ios-optimize"))
    args.ios_run = os.path.abspath(os.path.join(args.bin_dir, "ios-run"))
    args.models_dir = os.path.abspath(args.models_dir)
    args.out = os.path.abspath(args.out)
    args.charts_dir = os.path.abspath(args.charts_dir)
    if not os.path.isfile(args.ios_optimize):
        print(f"run_benchmarks: {args.ios_optimize} not found: build it first (scripts/build.sh) "
              "or pass --bin-dir", file=sys.stderr)
        return 2

    t_start = time.perf_counter()
    interp = "/usr/bin/python3" if sys.executable == "/usr/bin/python3" else "python3"
    command = shlex.join([interp, os.path.relpath(os.path.abspath(__file__), REPO)] + argv)
    models = [resolve_model(args.models_dir, m.strip()) for m in args.models.split(",") if m.strip()]
    probe = next((p for _, p in sorted(models, key=lambda m: os.path.getsize(m[1]) if m[1] else 1e18) if p), None)
    gpu, note, smi = detect_gpu(args, probe)
    log(f"run_benchmarks: GPU {'yes' if gpu else 'no'} ({note})")
    try:
        batches = [int(b) for b in (args.batches or ("1,16" if gpu else "1")).split(",") if b.strip()]
    except ValueError:
        ap.error(f"bad --batches '{args.batches}': expected e.g. 1,16")
    if not batches or any(b < 1 for b in batches):
        ap.error("batch sizes must be >= 1")
    args.batch_list = batches
    if args.optimize_timeout is None:
        args.optimize_timeout = 600.0 if gpu else 60.0

    work = args.work_dir or tempfile.mkdtemp(prefix="ios-bench-")
    os.makedirs(work, exist_ok=True)
    doc = {"format": "ios-benchmarks", "version": 1,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "command": command, "machine": machine_info(),
           "gpu": {"used": gpu, "note": note, "nvidia_smi": smi},
           "settings": {"iterations": args.iterations, "warmup": args.warmup,
                        "device_profile": None if gpu else args.device_profile,
                        "optimize_timeout_s": args.optimize_timeout, "batches": batches,
                        "max_block_units": args.max_block_units, "time_limit_s": args.time_limit,
                        "schedulers": [{"label": l, "scheduler": n, "params": p}
                                       for l, n, p in args.scheduler_list]},
           "cases": [], "failures": []}
    try:
        for label, path in models:
            for batch in batches:
                if path is None:
                    msg = (f"model file not found: {label}-bdyn.onnx or {label}.onnx in "
                           f"{os.path.relpath(args.models_dir, REPO)} (scripts/make-models.sh exports them)")
                    doc["cases"].append({"model": label, "batch": batch, "error": msg})
                    doc["failures"].append(f"{label}: {msg}")
                    log("  " + msg)
                    continue
                log(f"{label} batch {batch}: {os.path.relpath(path, REPO)}")
                case = bench_model(args, label, path, batch, gpu, work)
                doc["cases"].append(case)
                for r in case["rows"]:
                    if "error" in r:
                        doc["failures"].append(f"{label} batch {batch}, {r['label']}: ios-optimize {r['error']}")
                    for key in ("measured", "measured_nograph"):
                        if isinstance(r.get(key), dict) and "error" in r[key]:
                            doc["failures"].append(f"{label} batch {batch}, {r['label']}: ios-run "
                                                   f"{'(no CUDA graph) ' if key != 'measured' else ''}{r[key]['error']}")
                if case.get("ios_cold", {}).get("error"):
                    doc["failures"].append(f"{label} batch {batch}, ios (cold profile database): "
                                           f"ios-optimize {case['ios_cold']['error']}")
        if gpu:
            ios_dev = next((r["device"] for c in doc["cases"] for r in c.get("rows", [])
                            if r.get("device", {}).get("cudnn")), {})
            doc["gpu"]["ios_device"] = ios_dev
            names = [label for label, path in models if path]
            peers, perr = run_peers(args, names, batches, work)
            doc["peers"], doc["peers_error"] = peers, perr
            if perr:
                doc["failures"].append(f"PyTorch peers: {perr}")
            for res in (peers or {}).get("results", []):
                if res.get("error"):
                    doc["failures"].append(f"PyTorch {res['mode']} on {res['model']}: {res['error']}")
                for b, e in res.get("batches", {}).items():
                    if "error" in e:
                        doc["failures"].append(f"PyTorch {res['mode']} on {res['model']} batch {b}: {e['error']}")
                mm = (res.get("network") or {}).get("metadata_mismatch")
                if mm:
                    doc["failures"].append(f"PyTorch {res['model']}: network differs from the ONNX file: {'; '.join(mm)}")
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)

    doc["run_time_s"] = time.perf_counter() - t_start
    os.makedirs(args.charts_dir, exist_ok=True)
    charts = draw_charts(args, doc)
    doc["run_time_s"] = time.perf_counter() - t_start
    for case in doc["cases"]:
        case["wide_blocks"] = widest_blocks(case)
    # results.json: everything the tables show, without machine-local paths.
    for case in doc["cases"]:
        for r in case.get("rows", []):
            r.pop("schedule_file", None)
            r.pop("command", None)
            if "report" in r:
                r["report"].pop("schedule_file", None)
                r["report"]["model"] = case["model_file"]
                r["report"]["block_count"] = len(r["report"]["blocks"])
                if r["label"] != "ios":  # the per-block table shows the ios schedule only
                    del r["report"]["blocks"]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    write_markdown(args, doc, args.out, charts)
    res_path = os.path.join(args.charts_dir, "results.json")
    with open(res_path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(res_path + ".tmp", res_path)
    log(f"run_benchmarks: wrote {os.path.relpath(args.out, REPO)}, {os.path.relpath(res_path, REPO)}"
        + "".join(f", {os.path.relpath(f, REPO)}" for _, f in charts.get("files", []))
        + f" in {doc['run_time_s']:.0f} s; {len(doc['failures'])} failure(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
