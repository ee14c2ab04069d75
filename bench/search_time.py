#!/usr/bin/python3
"""The default search's time and memory on every shipped model (docs/benchmarks.md, "Search time").

    /usr/bin/python3 bench/search_time.py [--bin-dir build/apps] [--models-dir onnx_models/generated]
                                          [--models SUBSTRING,...] [--runs 3] [--machine TEXT]
                                          [--baseline bench/search_time_baseline.json]
                                          [--write-baseline FILE] [--out FILE] [--check]
                                          [--profile-db FILE]

For every float32 model of the models folder, at its default precision and
with `--precision fp16`, and for every typed file (*.fp16.onnx, *.bf16.onnx)
at its own type, it runs `ios-optimize MODEL --batch 1 --threads 1` (the
defaults: ios, r=3, s=8, simulated costs without a GPU, the default time
limit) and `--scheduler greedy` in turn, `--runs` times each, and reports:

- the whole process's wall time (import, search, report and files), the
  median of the runs, for ios and greedy, and their ratio;
- the search's own memory: the process's peak resident set (wait4's
  ru_maxrss) less its resident set after import (the `memory:` line
  ios-optimize -v prints once the model is imported);
- the predicted latency of the ios schedule, against the one recorded in
  --baseline (the commit the search-time work started from): "within 0.5%
  or better" is checked there;
- whether a block's search stopped at the time limit (any block whose
  search is not "complete" in --report-json).

The acceptance (docs/benchmarks.md): ios at most 2 s, or at most 2x greedy
where greedy takes over 1 s; no block stopped; predicted latency within
0.5% of the baseline or better; search memory at most 300 MB. With --check
the script exits 1 when a row misses; --max-ratio R replaces the time bound
by "at most R x greedy's wall time in the same run" (the cut ctest runs,
test/cli/search_time.sh: absolute seconds mean little on a shared machine).

With --profile-db FILE (on a machine with a GPU: `--cost measured` needs
one, and the script stops with ios-optimize's message where there is none)
every row also runs the measured search, `ios-optimize MODEL --batch 1
--threads 1 --cost measured --profile-db COPY` on a copy of FILE, --runs
times in a row: the first run's wall time (the database as given: stages it
lacks are measured on the GPU and added) and the median of the later ones
(warm: every stage asked about is in the copy).
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1024.0 * 1024.0
TIME_BOUND_S = 2.0        # ios's wall time, at most ...
GREEDY_FACTOR = 2.0       # ... or this times greedy's where greedy takes over 1 s
LATENCY_TOLERANCE = 0.005  # predicted latency at most 0.5% above the baseline's
MEMORY_BOUND_MB = 300.0    # the search's own memory (MB = 10^6 bytes)


def model_runs(models_dir, only):
    """(label, file, extra args) for every row: float32 models at their default precision and
    --precision fp16, typed files at their own type."""
    rows = []
    stems = {n[:-len(".onnx")] for n in os.listdir(models_dir) if n.endswith(".onnx")}
    for name in sorted(os.listdir(models_dir)):
        if not name.endswith(".onnx"):
            continue
        stem = name[:-len(".onnx")]
        # A name that is a whole file stem picks that file alone; others pick every file they are part of.
        if only and not any(o == stem or (o not in stems and o in stem) for o in only):
            continue
        path = os.path.join(models_dir, name)
        if stem.endswith(".fp16") or stem.endswith(".bf16"):
            rows.append((stem, path, []))
        else:
            rows.append((stem, path, []))
            rows.append((stem + " --precision fp16", path, ["--precision", "fp16"]))
    return rows


def run_once(binary, path, extra, work):
    """One ios-optimize process: wall seconds, peak RSS bytes, RSS after import (bytes or None),
    and the report."""
    report = os.path.join(work, "report.json")
    if os.path.exists(report):
        os.remove(report)
    cmd = [binary, path, "--batch", "1", "-v", "-o", os.path.join(work, "s.json"),
           "--report-json", report] + extra
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {err.decode()[-600:]}")
    after_import = None
    m = re.search(rb"memory: resident (\d+) bytes after import", err)
    if m:
        after_import = int(m.group(1))
    with open(report) as f:
        data = json.load(f)
    return wall, usage.ru_maxrss * 1024, after_import, data


def measure_with_profile(ios, path, extra, runs, work, profile_db):
    """(first, warm): wall seconds of the measured search on a copy of `profile_db`, the first run's
    and the median of the later ones (None with one run)."""
    copy = os.path.join(work, "profile.sqlite")
    shutil.copyfile(profile_db, copy)
    walls = [run_once(ios, path, extra + ["--threads", "1", "--cost", "measured", "--profile-db", copy], work)[0]
             for _ in range(runs)]
    return walls[0], statistics.median(walls[1:]) if len(walls) > 1 else None


def measure(bin_dir, label, path, extra, runs, work, profile_db=""):
    ios = os.path.join(bin_dir, "ios-optimize")
    walls = {"ios": [], "greedy": []}
    search_bytes = []
    report = None
    for _ in range(runs):
        # Interleaved, so that load on the machine affects both alike.
        wall, peak, after, report = run_once(ios, path, extra + ["--threads", "1"], work)
        walls["ios"].append(wall)
        if after is not None:
            search_bytes.append(peak - after)
        wall, _, _, _ = run_once(ios, path, extra + ["--scheduler", "greedy"], work)
        walls["greedy"].append(wall)
    blocks = report.get("blocks", [])
    stopped = sum(1 for b in blocks if b.get("search") != "complete")
    measured = measure_with_profile(ios, path, extra, runs, work, profile_db) if profile_db else None
    return {
        "measured_s": measured,
        "label": label,
        "ios_s": statistics.median(walls["ios"]),
        "greedy_s": statistics.median(walls["greedy"]),
        "search_mb": max(search_bytes) / 1e6 if search_bytes else None,
        "predicted_ms": report["predicted_latency_ms"],
        "search_ms": report.get("search_ms"),
        "transitions": report.get("transitions"),
        "blocks": len(blocks),
        "stopped": stopped,
    }


def verdict(row, baseline, max_ratio):
    """The reasons `row` misses the acceptance (empty: it meets it)."""
    misses = []
    if max_ratio:
        time_ok = row["ios_s"] <= max_ratio * row["greedy_s"]
    else:
        time_ok = row["ios_s"] <= TIME_BOUND_S or (
            row["greedy_s"] > 1.0 and row["ios_s"] <= GREEDY_FACTOR * row["greedy_s"])
    if not time_ok:
        misses.append(f"{row['ios_s']:.2f} s (greedy {row['greedy_s']:.2f} s)")
    if row["stopped"]:
        misses.append(f"{row['stopped']} block(s) stopped by the time limit")
    if row["search_mb"] is not None and row["search_mb"] > MEMORY_BOUND_MB:
        misses.append(f"search memory {row['search_mb']:.0f} MB")
    base = baseline.get(row["label"]) if baseline else None
    if base is not None and row["predicted_ms"] > base * (1.0 + LATENCY_TOLERANCE):
        misses.append(f"predicted {row['predicted_ms']:.4f} ms, baseline {base:.4f} ms")
    return misses


def table(rows, baseline, max_ratio):
    measured = any(r["measured_s"] for r in rows)
    out = ["| model | ios s | greedy s | ratio | search MB | predicted ms | vs baseline | stopped | meets |"
           + (" measured s (first, warm) |" if measured else ""),
           "|---|---|---|---|---|---|---|---|---|" + ("---|" if measured else "")]
    for r in rows:
        base = baseline.get(r["label"]) if baseline else None
        vs = f"{(r['predicted_ms'] / base - 1.0) * 100.0:+.2f}%" if base else ""
        mb = f"{r['search_mb']:.0f}" if r["search_mb"] is not None else "?"
        misses = verdict(r, baseline, max_ratio)
        out.append(f"| {r['label']} | {r['ios_s']:.2f} | {r['greedy_s']:.2f} | {r['ios_s'] / r['greedy_s']:.2f} | "
                   f"{mb} | {r['predicted_ms']:.4f} | {vs} | {r['stopped']} | "
                   f"{'yes' if not misses else 'no: ' + '; '.join(misses)} |"
                   + (f" {r['measured_s'][0]:.2f}, "
                      f"{'-' if r['measured_s'][1] is None else format(r['measured_s'][1], '.2f')} |"
                      if measured else ""))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin-dir", default=os.path.join(REPO, "build", "apps"))
    ap.add_argument("--models-dir", default=os.path.join(REPO, "onnx_models", "generated"))
    ap.add_argument("--models", default="", help="comma-separated substrings of the model files to run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", default=os.path.join(REPO, "bench", "search_time_baseline.json"))
    ap.add_argument("--write-baseline", default="", help="record the predicted latencies in this file")
    ap.add_argument("--machine", default="")
    ap.add_argument("--out", default="", help="also write the section (Markdown) here")
    ap.add_argument("--check", action="store_true", help="exit 1 when a row misses the acceptance")
    ap.add_argument("--profile-db", default="",
                    help="also time the measured search (--cost measured, needs a GPU) on a copy of this "
                         "profile database")
    ap.add_argument("--max-ratio", type=float, default=0.0,
                    help="with --check: the time bound is instead at most this many times greedy's wall "
                         "time, measured in the same run (the CI cut, on a shared machine)")
    args = ap.parse_args()
    only = [m for m in args.models.split(",") if m]
    baseline = {}
    if args.baseline and os.path.exists(args.baseline) and not args.write_baseline:
        with open(args.baseline) as f:
            baseline = json.load(f)["predicted_ms"]
    rows = []
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as work:
        for label, path, extra in model_runs(args.models_dir, only):
            row = measure(args.bin_dir, label, path, extra, args.runs, work, args.profile_db)
            rows.append(row)
            print(f"{label}: ios {row['ios_s']:.2f} s, greedy {row['greedy_s']:.2f} s, "
                  f"{row['predicted_ms']:.4f} ms predicted", file=sys.stderr, flush=True)
    if args.write_baseline:
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        with open(args.write_baseline, "w") as f:
            json.dump({"commit": commit, "note": "predicted latency (ms) of the default ios search, "
                                                 "--batch 1 --threads 1, simulated h100",
                       "predicted_ms": {r["label"]: r["predicted_ms"] for r in rows}}, f, indent=1, sort_keys=True)
            f.write("\n")
    text = table(rows, baseline, args.max_ratio if args.check else 0.0)
    minutes = (time.monotonic() - start) / 60.0
    header = ("## Search time\n\n"
              f"Written by `bench/search_time.py` on {datetime.date.today().isoformat()} in {minutes:.0f} minutes"
              f"{', ' + args.machine if args.machine else ''} ({platform.machine()}, {os.cpu_count()} cores). "
              "Every float32 model of `onnx_models/generated` at its default precision and with "
              "`--precision fp16`, and every typed file at its own type: `ios-optimize MODEL --batch 1 --threads 1` "
              "(the defaults: `ios`, r=3, s=8, the simulator with the `h100` profile, the default time limit) "
              f"and `--scheduler greedy`, interleaved, median of {args.runs} runs of the whole process's wall "
              "time (import, search, report and files). `search MB` is the search's own memory: the peak resident "
              "set less the resident set once the model is imported (`ios-optimize -v`'s `memory:` line), the "
              "largest of the runs. `vs baseline` compares the predicted latency with "
              "`bench/search_time_baseline.json` (commit a38d9c4, before the search-time work). `stopped` counts "
              "blocks whose search did not complete. A row meets the acceptance when ios takes at most 2 s, or "
              "at most 2x greedy where greedy takes over 1 s, no block stopped, the prediction is within 0.5% of "
              "the baseline or better, and the search takes at most 300 MB. On a loaded machine the seconds "
              "stretch for both programs alike; the ratio is the steadier figure."
              + (f" `measured s`: `--cost measured` on a copy of `{os.path.basename(args.profile_db)}`, the first "
                 "run's wall time (stages the database lacks measured on the GPU) and the median of the later, warm "
                 "ones." if args.profile_db else "") + "\n\n")
    print(header + text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(header + text)
    if args.check:
        failed = [r for r in rows if verdict(r, baseline, args.max_ratio)]
        for r in failed:
            print(f"FAIL: {r['label']}: {'; '.join(verdict(r, baseline, args.max_ratio))}", file=sys.stderr)
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:  # an ios-optimize run that failed: its command and message
        print(f"search_time.py: {e}", file=sys.stderr)
        sys.exit(2)
