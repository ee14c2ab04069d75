#!/usr/bin/python3
"""The IOS search's scaling with fan-out width and block width (docs/benchmarks.md, "Scaling").

    /usr/bin/python3 bench/scaling.py [--bin-dir build/apps] [--unbounded-timeout 60]
                                      [--machine TEXT] [--out docs/benchmarks/scaling.md]

Writes the "Scaling" section of docs/benchmarks.md to --out (which
bench/harness/run_benchmarks.py carries into docs/benchmarks.md). For each
model it runs ios-optimize --cost simulated once per setting and
prints one Markdown table row: wall time and peak memory (the child's
maximum resident set size, from GNU time's %M) of the whole process, import
included, and the predicted latency. Settings: greedy; ios with the default
time limit; ios --time-limit 10; ios --time-limit 0 (no limit), killed after
--unbounded-timeout seconds and shown as "> N s".

Models (onnx_models/make_large_models.py): fanout_N, N parallel 3x3
convolutions of one input concatenated, for N = 10, 50, 200, 1,000 and
20,000 (unit formation splits the region into parts of at most 18
branches); and single blocks of 16, 17 and 18 branches (fanout_15/16/17:
the concatenation makes one block of width N with the default
--max-block-bound).
"""

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FANOUTS = [10, 50, 200, 1000, 20000]
SINGLE_BLOCKS = [15, 16, 17]
SETTINGS = [("greedy", ["--scheduler", "greedy"]), ("ios, default limit", []),
            ("ios --time-limit 10", ["--time-limit", "10"]), ("ios --time-limit 0", ["--time-limit", "0"])]


def run(binary, model, extra, timeout, work):
    """(wall s, peak MiB, predicted ms, coverage) of one run, or None when killed."""
    report = os.path.join(work, "report.json")
    rss = os.path.join(work, "rss.txt")
    cmd = ["/usr/bin/time", "-f", "%M", "-o", rss, binary, model, "--cost", "simulated", "-q",
           "-o", os.path.join(work, "s.json"), "--report-json", report] + extra
    t0 = time.perf_counter()
    # Its own process group: on timeout GNU time and ios-optimize both end.
    proc = subprocess.Popen(cmd, start_new_session=True)
    try:
        if proc.wait(timeout=timeout) != 0:
            raise SystemExit(f"scaling.py: {' '.join(cmd)} failed")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None
    wall = time.perf_counter() - t0
    peak = int(open(rss).read().split()[-1]) / 1024.0
    doc = json.load(open(report))
    complete = sum(1 for b in doc["blocks"] if b.get("search") == "complete")
    searched = sum(1 for b in doc["blocks"] if "search" in b)
    coverage = f"{complete}/{searched}" if searched else ""
    return wall, peak, doc["predicted_latency_ms"], coverage


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=os.path.join(REPO, "build", "apps"))
    ap.add_argument("--unbounded-timeout", type=float, default=60.0)
    ap.add_argument("--machine", default="2-core development machine, shared",
                    help="how the machine is described in the section")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "benchmarks", "scaling.md"))
    args = ap.parse_args()
    binary = os.path.join(args.bin_dir, "ios-optimize")
    work = tempfile.mkdtemp(prefix="ios-scaling-")
    sizes = sorted(set(FANOUTS + SINGLE_BLOCKS))
    subprocess.run([sys.executable, os.path.join(REPO, "onnx_models", "make_large_models.py"), work] +
                   [f"fanout:{n}" for n in sizes], check=True, stdout=subprocess.DEVNULL)
    rows = []
    for n in sizes:
        model = os.path.join(work, f"fanout_{n}.onnx")
        for label, extra in SETTINGS:
            timeout = args.unbounded_timeout if extra == ["--time-limit", "0"] else 600.0
            result = run(binary, model, extra, timeout, work)
            if result is None:
                rows.append(f"| fanout_{n} | | {label} | > {timeout:.0f} (killed) | | | |")
                print(rows[-1], flush=True)
                continue
            doc = json.load(open(os.path.join(work, "report.json")))
            widest = max(b["units"] for b in doc["blocks"])
            shape = f"{len(doc['blocks'])} ({widest} units)"
            wall, peak, predicted, coverage = result
            rows.append(f"| fanout_{n} | {shape} | {label} | {wall:.1f} | {peak:.0f} | {predicted:.4f} | {coverage} |")
            print(rows[-1], flush=True)
    head = [
        "## Scaling",
        "",
        f"Written by `bench/scaling.py` on {datetime.date.today().isoformat()}, {args.machine}, "
        "simulated H100 cost model (no GPU). `fanout_N` is N parallel 3x3 convolutions (32 channels, "
        "8x8) of one input concatenated (`onnx_models/make_large_models.py fanout:N`); unit formation "
        "splits wider regions into parts of at most 18 branches, and `fanout_15` to `fanout_17` are "
        "single blocks of 16 to 18 units. Wall time and peak memory (GNU time's maximum resident set) "
        "are of the whole `ios-optimize` process, import and reports included; the default time limit "
        "is 50 s of search; `--time-limit 0` runs are killed after "
        f"{args.unbounded_timeout:.0f} s. One run per row on a machine other builds share: times "
        "vary by up to 2x between runs.",
        "",
        "| model | blocks (widest) | setting | wall s | peak MiB | predicted ms | blocks searched completely |",
        "|---|---|---|---|---|---|---|",
    ]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(head + rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
