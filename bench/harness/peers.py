#!/usr/bin/python3
"""Time the benchmark networks in PyTorch, the peers ios is compared with.

For each model and batch size, four ways of running the same network on the
GPU, each timed as ios-run times a schedule (CUDA events around one forward
pass on the current stream, a synchronisation after each iteration, warm-up
iterations first, statistics over the timed ones):

    eager                 torch.backends.cudnn.benchmark = True, no_grad
    cuda_graph            the eager forward captured once in a torch.cuda.CUDAGraph, replayed
    compile_default       torch.compile(model, mode="default", dynamic=False)
    compile_max_autotune  torch.compile(model, mode="max-autotune", dynamic=False)

The networks come from onnx_models/export_models.py's registry (MODELS), built
and calibrated exactly as that script builds them before exporting (same
seed, same RandWire graph files), so the PyTorch network and the ONNX file ios
runs have the same layers and weights. The input size is read from the ONNX
file's metadata (ios.image_size) when the file is in --models-dir, else the
model's default size; the input is N(0,1) from a seeded generator.

Precision (--precision, default tf32, as ios-run's default): tf32 allows TF32
tensor cores in cuDNN convolutions (torch.backends.cudnn.allow_tf32 = True)
and keeps matrix products in FP32 (torch.backends.cuda.matmul.allow_tf32 =
False), which is what ios does (cuDNN convolutions with tensor-op math, its
own FP32 GEMM); fp32 turns TF32 off in both.

Each (model, mode) pair runs in its own child process with a time limit
(--mode-timeout), so a compiler failure, a hang or a crash is reported for
that pair and the others still run. Exit codes: 0 ok (failures of single
modes are recorded in the JSON, not fatal), 2 usage error, 3 no CUDA device.

    python3 bench/harness/peers.py --models inception_v3,squeezenet1_1 --batches 1,16 \\
        --out peers.json
    /usr/bin/python3 bench/harness/peers.py --cpu-smoke    # no GPU: check the plumbing only
"""

import argparse
import datetime
import json
import math
import os
import platform
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
EXPORT_DIR = os.path.join(REPO, "onnx_models")

MODES = ["eager", "cuda_graph", "compile_default", "compile_max_autotune"]
DEFAULT_MODELS = "inception_v3,squeezenet1_1,randwire,nasnet_a_large"
EXIT_NO_GPU = 3


def stats(samples, batch):
    """The statistics ios-run reports (lib/exec/stats.h): nearest-rank
    percentiles, median as the mean of the middle pair, population stddev."""
    s = sorted(samples)
    n = len(s)

    def pct(p):
        rank = math.ceil(p * n / 100.0 - 1e-9)
        return s[min(max(rank, 1), n) - 1]

    mean = sum(s) / n
    median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0
    std = math.sqrt(sum((x - mean) ** 2 for x in s) / n)
    return {"count": n, "min_ms": s[0], "max_ms": s[-1], "mean_ms": mean, "median_ms": median,
            "p90_ms": pct(90), "p95_ms": pct(95), "p99_ms": pct(99), "stddev_ms": std,
            "cv": std / mean if mean > 0 else 0.0,
            "throughput_qps": batch * 1000.0 / mean if mean > 0 else 0.0}


def onnx_file(models_dir, name):
    """The file run_benchmarks.py runs for `name` (its resolve_model), or None."""
    from run_benchmarks import resolve_model  # noqa: E402  (sibling script, stdlib only)
    return resolve_model(models_dir, name)[1]


def onnx_metadata(path):
    """ios.* metadata of an exported model, without reading its weights twice."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    return {p.key: p.value for p in model.metadata_props}


def build_network(name, args, image_size=None):
    """The registry's network, built and calibrated as export_models.py does.
    Returns (model on CPU in eval mode, (H, W), info dict)."""
    sys.path.insert(0, EXPORT_DIR)
    import export_models as em  # noqa: E402  (the project's model registry)
    if name not in em.MODELS:
        raise ValueError(f"unknown model '{name}'; known: {', '.join(em.MODELS)}")
    spec = em.MODELS[name]
    info = {"onnx_file": None, "metadata_checked": False}
    hw = tuple(spec.size)
    seed = args.seed
    path = onnx_file(args.models_dir, name) if args.models_dir else None
    meta = {}
    if path:
        meta = onnx_metadata(path)
        info["onnx_file"] = os.path.relpath(path, REPO)
        if "ios.image_size" in meta:
            hw = tuple(int(v) for v in meta["ios.image_size"].split("x"))
        if "ios.seed" in meta:
            seed = int(meta["ios.seed"])
    if image_size:
        hw = image_size
    build_args = argparse.Namespace(seed=seed, randwire_graphs=args.randwire_graphs)
    em.seed_everything(seed)
    model = spec.build(build_args)
    if spec.prepare:
        spec.prepare(model)
    em.calibrate(model, spec, hw, seed)
    model.eval()
    sources = getattr(model, "graph_sources", None)
    info.update({"seed": seed, "image_size": f"{hw[0]}x{hw[1]}", "doc": spec.doc,
                 "randwire_graphs": ",".join(sources) if sources else None})
    if meta:
        # The ONNX file ios runs must be this network: same seed, same graphs.
        mismatches = []
        if meta.get("ios.model", name) != name:
            mismatches.append(f"ios.model {meta['ios.model']} != {name}")
        if sources and meta.get("ios.randwire_graphs") not in (None, ",".join(sources)):
            mismatches.append(f"randwire graphs {meta['ios.randwire_graphs']} != {','.join(sources)}")
        info["metadata_checked"] = True
        info["metadata_mismatch"] = mismatches
    return model, hw, info


def set_precision(torch, precision):
    tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        torch.set_float32_matmul_precision("highest")
    except AttributeError:
        pass
    torch.backends.cudnn.benchmark = True
    return {"precision": precision, "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn.benchmark": torch.backends.cudnn.benchmark}


def time_cuda(torch, fn, warmup, iterations):
    """Per-iteration CUDA-event times (ms) of fn() on the current stream."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iterations):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return times


def worker(args):
    """One model, one mode, every batch: prints one JSON object on stdout."""
    import torch
    out = {"model": args.model, "mode": args.mode, "batches": {}}
    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device"}))
        return EXIT_NO_GPU
    out["settings"] = set_precision(torch, args.precision)
    t0 = time.perf_counter()
    model, hw, info = build_network(args.model, args)
    out["build_s"] = time.perf_counter() - t0
    out["network"] = info
    model = model.cuda()
    gen = torch.Generator().manual_seed(args.seed + 2)
    for batch in args.batch_list:
        entry = {}
        try:
            x = torch.randn(batch, 3, hw[0], hw[1], generator=gen).cuda()
            t1 = time.perf_counter()
            with torch.no_grad():
                if args.mode == "eager":
                    fn = lambda: model(x)  # noqa: E731
                elif args.mode == "cuda_graph":
                    static_x = x.clone()
                    side = torch.cuda.Stream()
                    side.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(side):  # cuDNN autotuning happens here, not in the capture
                        for _ in range(3):
                            model(static_x)
                    torch.cuda.current_stream().wait_stream(side)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        static_y = model(static_x)

                    def fn(g=graph, keep=(static_x, static_y)):  # the graph's tensors stay alive
                        g.replay()
                else:
                    torch._dynamo.reset()
                    mode = "default" if args.mode == "compile_default" else "max-autotune"
                    compiled = torch.compile(model, mode=mode, dynamic=False)
                    compiled(x)  # compiles (and autotunes) here
                    torch.cuda.synchronize()
                    fn = lambda: compiled(x)  # noqa: E731
                entry["prepare_s"] = time.perf_counter() - t1
                times = time_cuda(torch, fn, args.warmup, args.iterations)
            entry["summary"] = stats(times, batch)
            entry["warmup_iterations"] = args.warmup
        except Exception as e:  # one batch failing must not hide the others
            entry["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300]
        out["batches"][str(batch)] = entry
        torch.cuda.empty_cache()
    print("PEERS-RESULT " + json.dumps(out))
    return 0


def versions():
    v = {"python": platform.python_version()}
    try:
        import torch
        v["torch"] = torch.__version__
        v["torch_cuda"] = torch.version.cuda
        raw = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        if raw:  # cuDNN 9 encodes 9.19.0 as 91900, cuDNN 8 encodes 8.9.7 as 8907
            major, rest = (raw // 10000, raw % 10000) if raw >= 90000 else (raw // 1000, raw % 1000)
            v["cudnn"] = f"{major}.{rest // 100}.{rest % 100}"
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            v["device"] = p.name
            v["compute_capability"] = f"{p.major}.{p.minor}"
            v["multiprocessors"] = p.multi_processor_count
        import torchvision
        v["torchvision"] = torchvision.__version__
        import triton
        v["triton"] = triton.__version__
    except Exception as e:  # versions are informative only
        v.setdefault("note", str(e))
    return v


def cpu_smoke(args):
    """No GPU: build each network at a small size and run it once on the CPU,
    to check the registry import, the metadata check and the input shapes."""
    import torch
    sys.path.insert(0, EXPORT_DIR)
    import export_models as em
    ok = True
    for name in args.model_list:
        t0 = time.perf_counter()
        try:
            model, hw, info = build_network(name, args, tuple(em.MODELS[name].test_size))
            with torch.no_grad():
                y = model(torch.randn(1, 3, hw[0], hw[1]))
            finite = bool(torch.isfinite(y).all())
            ok &= finite and not info.get("metadata_mismatch")
            print(f"{name}: {hw[0]}x{hw[1]} -> {tuple(y.shape)} finite={finite} "
                  f"onnx={info['onnx_file']} mismatch={info.get('metadata_mismatch')} "
                  f"({time.perf_counter() - t0:.1f} s)")
        except Exception as e:
            ok = False
            print(f"{name}: FAILED {type(e).__name__}: {e}")
    print("cpu smoke:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def parse_list(text, kind, known=None):
    items = [t.strip() for t in text.split(",") if t.strip()]
    if known is not None:
        bad = [t for t in items if t not in known]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {kind} {', '.join(bad)}; known: {', '.join(known)}")
    return items


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Writes JSON (--out) that run_benchmarks.py --peers-json merges.")
    ap.add_argument("--models", default=DEFAULT_MODELS, help="comma-separated registry names (default: %(default)s)")
    ap.add_argument("--batches", default="1", help="comma-separated batch sizes (default: %(default)s)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated, of: " + ", ".join(MODES))
    ap.add_argument("--models-dir", default=os.path.join(REPO, "onnx_models", "generated"),
                    help="exported ONNX files, read for the input size and a consistency check")
    ap.add_argument("--randwire-graphs", default=None,
                    help="RandWire graph folder (default: export_models.py's default)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the weights (when no ONNX file says) and inputs")
    ap.add_argument("--iterations", type=int, default=200, help="timed iterations (default: %(default)s)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed iterations (default: %(default)s)")
    ap.add_argument("--precision", choices=["tf32", "fp32"], default="tf32")
    ap.add_argument("--mode-timeout", type=float, default=900.0,
                    help="seconds for one model in one mode, every batch (default: %(default)s)")
    ap.add_argument("--out", default="peers.json", help="JSON output (default: %(default)s)")
    ap.add_argument("--cpu-smoke", action="store_true", help="no GPU needed: build and run each network once on the CPU")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        args.model_list = parse_list(args.models, "model")
        args.mode_list = parse_list(args.modes, "mode", MODES)
        args.batch_list = [int(b) for b in parse_list(args.batches, "batch")]
        if any(b < 1 for b in args.batch_list) or args.iterations < 1 or args.warmup < 0:
            raise argparse.ArgumentTypeError("batches and --iterations must be >= 1, --warmup >= 0")
    except (argparse.ArgumentTypeError, ValueError) as e:
        ap.error(str(e))
    if args.randwire_graphs is None:
        sys.path.insert(0, EXPORT_DIR)
        import export_models as em
        args.randwire_graphs = em.DEFAULT_GRAPH_DIR

    if args.worker:
        return worker(args)
    if args.cpu_smoke:
        return cpu_smoke(args)

    import torch
    if not torch.cuda.is_available():
        print("peers.py: no CUDA device: the PyTorch peers are timed on a GPU only "
              "(--cpu-smoke checks the networks on the CPU)", file=sys.stderr)
        return EXIT_NO_GPU

    doc = {"format": "ios-peers", "version": 1,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "versions": versions(), "iterations": args.iterations, "warmup": args.warmup,
           "precision": args.precision, "seed": args.seed, "results": []}
    for name in args.model_list:
        for mode in args.mode_list:
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--model", name, "--mode", mode,
                   "--batches", ",".join(map(str, args.batch_list)), "--models-dir", args.models_dir,
                   "--randwire-graphs", args.randwire_graphs, "--seed", str(args.seed),
                   "--iterations", str(args.iterations), "--warmup", str(args.warmup),
                   "--precision", args.precision]
            t0 = time.perf_counter()
            result = {"model": name, "mode": mode}
            # Own process group: on a time-out the worker and the compiler
            # processes it started are all ended.
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
            try:
                stdout, stderr = p.communicate(timeout=args.mode_timeout)
                line = next((l for l in stdout.splitlines() if l.startswith("PEERS-RESULT ")), None)
                if line:
                    result.update(json.loads(line[len("PEERS-RESULT "):]))
                else:
                    tail = (stderr.strip().splitlines() or ["no output"])[-1]
                    result["error"] = f"exit {p.returncode}: {tail}"[:300]
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
                result["error"] = f"timed out after {args.mode_timeout:.0f} s"
            result["wall_s"] = time.perf_counter() - t0
            doc["results"].append(result)
            summary = []
            for b, e in result.get("batches", {}).items():
                summary.append(f"b{b} " + (f"{e['summary']['median_ms']:.4f} ms" if "summary" in e else e.get("error", "?")))
            print(f"peers: {name:<15} {mode:<21} {result['wall_s']:6.1f} s  "
                  + ("; ".join(summary) if summary else result.get("error", "")), flush=True)
            # Write after every pair: a later crash or time-out keeps what was measured.
            tmp = args.out + ".tmp"
            with open(tmp, "w") as f:
                json.dump(doc, f, indent=1)
            os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
