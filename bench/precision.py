#!/usr/bin/python3
"""Predicted latency and IOS schedules at fp32, tf32, fp16 and bf16 (docs/benchmarks.md, "Precision").

    /usr/bin/python3 bench/precision.py [--bin-dir build/apps] [--machine TEXT]
                                        [--out docs/benchmarks/precision.md]

Writes the "Precision" section of docs/benchmarks.md to --out, which
bench/harness/run_benchmarks.py carries into docs/benchmarks.md with the
other section files. For every model of docs/benchmarks.md's summary table
(the same files as run_benchmarks.py: RandWire at 64x64, NASNet-A Large at
99x99, DeepLabV3 and the detectors at 128x128, Swin-T at 112x112) and each
precision it runs `ios-optimize --cost simulated --batch 1 --precision P`
twice, with `--scheduler sequential` and `--scheduler ios` (defaults
otherwise, `--report-json` for the search time). fp32 and tf32 are the math
of the float32 graph; fp16 and bf16 convert it (Casts around the operators
kept in float32, float32 inputs and outputs). Everything is predicted by the
GPU simulator with the `h100` profile: no GPU ran anything.

It writes two tables and the prose between them:

1. per model and precision: the sequential and IOS schedules' predicted
   latencies, the IOS gain (sequential / IOS) and the IOS search time, with
   IOS's speed-up at fp16 over tf32;
2. per model: whether IOS's schedule changes with the precision. A converted
   graph has Cast units (`<tensor>/to_half`, `<tensor>/to_float32`) and a
   float32 graph output produced by a half unit is a Cast that keeps the
   output's name while its producer is renamed `<name>/half`; the
   comparison drops the Casts (and stages and groups left empty), maps
   renamed ids back, and compares the stages as a set of
   (strategy, set of groups, each a set of unit ids). Per precision it gives
   the stages, the concurrent stages with more than one group, the merge
   stages and the mean and largest number of groups per stage; between two
   precisions the stages found only on one side, the merge stages only on
   one side and the pairs of units that run side by side (in different
   groups of one concurrent stage) only on one side. Where two schedules
   differ, each is replayed at the other precision (its stages with the
   other graph's Casts placed after their producers, predicted by
   `ios-run --backend sim`) and compared with that precision's own.

The analysis at the end of the section (--analysis, default
docs/benchmarks/precision_analysis.md) is written by hand after reading the
numbers and carried in verbatim; the script does not check it against them.

Each ios-optimize run is limited to --timeout seconds (60): a run that takes
longer is reported as "timed out" in its cell. The output depends only on the
model files, the binaries and the profile (the schedule does not depend on
--threads), except where ios-optimize's own --time-limit (50 s of search by
default) cuts a search: the search column then says how many blocks were
searched completely, and that cell's schedule depends on the machine's speed.
Search times and the date vary from run to run.
"""

import argparse
import datetime
import itertools
import json
import os
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (label, file in --models-dir): bench/harness/run_benchmarks.py's resolution
# of its default models.
MODELS = [("inception_v3", "inception_v3-bdyn.onnx"),
          ("squeezenet1_1", "squeezenet1_1-bdyn.onnx"),
          ("randwire", "randwire-bdyn-64x64.onnx"),
          ("nasnet_a_large", "nasnet_a_large-bdyn-99x99.onnx"),
          ("deeplabv3_resnet50", "deeplabv3_resnet50-bdyn-128x128.onnx"),
          ("swin_t", "swin_t-112x112.onnx"),
          ("maxvit_t", "maxvit_t.onnx"),
          ("retinanet_resnet50_fpn", "retinanet_resnet50_fpn-128x128.onnx"),
          ("fcos_resnet50_fpn", "fcos_resnet50_fpn-128x128.onnx"),
          ("ssdlite320_mobilenet_v3_large", "ssdlite320_mobilenet_v3_large.onnx")]
PRECISIONS = ["fp32", "tf32", "fp16", "bf16"]
PAIRS = [("tf32", "fp16"), ("fp16", "bf16"), ("tf32", "fp32")]  # schedule comparisons (a, b)
CAST_SUFFIXES = ("/to_half", "/to_float32")
RENAMED_SUFFIX = "/half"


def optimize(binary, model, precision, scheduler, work, timeout):
    """(report, schedule) of one ios-optimize run, or None when it timed out."""
    base = os.path.join(work, f"{precision}.{scheduler}")
    cmd = [binary, model, "--batch", "1", "--cost", "simulated", "--quiet", "--precision", precision,
           "--scheduler", scheduler, "-o", base + ".schedule.json", "--report-json", base + ".report.json"]
    try:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    with open(base + ".report.json") as f:
        report = json.load(f)
    with open(base + ".schedule.json") as f:
        schedule = json.load(f)
    return report, schedule


def ordered_stages(schedule):
    """The stages as (strategy, [[unit id, ...], ...]) without Cast units, with
    renamed ids mapped back, and the number of Casts dropped. A graph output
    kept float32 is a Cast that took the output's name, its half producer
    `<name>/half`: that Cast is dropped and the producer takes the name."""
    ids = {u for stage in schedule["stages"] for group in stage["groups"] for u in group}
    renamed = {u[:-len(RENAMED_SUFFIX)] for u in ids if u.endswith(RENAMED_SUFFIX)}
    stages, casts = [], 0
    for stage in schedule["stages"]:
        groups = []
        for group in stage["groups"]:
            kept = []
            for unit in group:
                if unit.endswith(CAST_SUFFIXES) or unit in renamed:
                    casts += 1
                    continue
                kept.append(unit[:-len(RENAMED_SUFFIX)] if unit.endswith(RENAMED_SUFFIX) else unit)
            if kept:
                groups.append(kept)
        if groups:
            stages.append((stage["strategy"], groups))
    return stages, casts


def structure(schedule):
    """ordered_stages as a list of (strategy, frozenset of frozensets of unit
    ids), and the Casts dropped."""
    stages, casts = ordered_stages(schedule)
    return [(s, frozenset(frozenset(g) for g in groups)) for s, groups in stages], casts


def transplant(source, target):
    """`target` (a schedule file's JSON) with the stages of `source` (another
    precision's schedule of the same model): source's stages without its
    Casts, ids renamed to target's, and each of target's Casts right after
    the unit it reads in that unit's group (in a stage of its own after a
    merge stage, and before everything for a graph input's). None when
    target has a Cast whose producer is no unit."""
    ids = {u for stage in target["stages"] for group in stage["groups"] for u in group}
    renamed = {u[:-len(RENAMED_SUFFIX)] for u in ids if u.endswith(RENAMED_SUFFIX)}
    casts = {}  # Cast unit -> the unit it reads (None: a graph input)
    for u in ids:
        if u in renamed:
            casts[u] = u + RENAMED_SUFFIX
        elif u.endswith(CAST_SUFFIXES):
            base = u.rsplit("/", 1)[0]
            casts[u] = base if base in ids else (base + RENAMED_SUFFIX if base + RENAMED_SUFFIX in ids else None)
    after = {}
    for cast, producer in casts.items():
        after.setdefault(producer, []).append(cast)
    stages = [{"strategy": "concurrent", "groups": [[c]]} for c in sorted(after.get(None, []))]
    placed = set(after.get(None, []))

    def chain(u):  # the Casts reading u, and those reading them, in order
        out = []
        for c in sorted(after.get(u, [])):
            placed.add(c)
            out += [c] + chain(c)
        return out

    for strategy, groups in ordered_stages(source)[0]:
        groups = [[u + RENAMED_SUFFIX if u + RENAMED_SUFFIX in ids else u for u in g] for g in groups]
        if strategy == "merge":
            stages.append({"strategy": strategy, "groups": groups})
            stages += [{"strategy": "concurrent", "groups": [[c]]} for u in groups[0] for c in chain(u)]
        else:
            stages.append({"strategy": strategy, "groups": [[x for u in g for x in [u] + chain(u)] for g in groups]})
    if placed != set(casts):
        return None
    for stage in stages:
        stage["predicted_ms"] = 0.0  # ios-run --backend sim predicts the whole plan anew
    result = dict(target)
    result["stages"] = stages
    return result


def replay(run_binary, model, schedule, work, timeout):
    """The GPU simulator's latency of a schedule file's JSON (ios-run --backend sim)."""
    path, times = os.path.join(work, "replay.schedule.json"), os.path.join(work, "replay.times.json")
    with open(path, "w") as f:
        json.dump(schedule, f)
    try:
        p = subprocess.run([run_binary, model, path, "--backend", "sim", "--quiet", "--export-times", times],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0:
        return None
    with open(times) as f:
        return json.load(f)["runs"][0]["summary"]["median_ms"]


def stats(stages):
    counts = [len(g) for _, g in stages]
    return {"stages": len(stages),
            "wide": sum(1 for s, g in stages if s == "concurrent" and len(g) > 1),
            "merges": sum(1 for s, _ in stages if s == "merge"),
            "mean_groups": sum(counts) / len(counts),
            "max_groups": max(counts),
            "units": sum(len(u) for _, g in stages for u in g)}


def side_by_side(stages):
    """Unordered pairs of units in different groups of one concurrent stage."""
    pairs = set()
    for strategy, groups in stages:
        if strategy != "concurrent":
            continue
        for g1, g2 in itertools.combinations(groups, 2):
            pairs.update(frozenset((a, b)) for a in g1 for b in g2)
    return pairs


def compare(a, b):
    """Cell text: a and b are two structures of one model."""
    if set(a) == set(b):
        return "identical"
    sa, sb = set(a), set(b)
    ma = {g for s, g in sa if s == "merge"}
    mb = {g for s, g in sb if s == "merge"}
    pa, pb = side_by_side(a), side_by_side(b)
    units_a = {u for _, g in a for grp in g for u in grp}
    units_b = {u for _, g in b for grp in g for u in grp}
    text = (f"differs: {len(sa - sb)} / {len(sb - sa)} stages only on one side; merges "
            f"{len(ma - mb)} / {len(mb - ma)}; side-by-side pairs {len(pa - pb)} / {len(pb - pa)}")
    if units_a != units_b:
        text += f"; unit sets differ ({len(units_a - units_b)} / {len(units_b - units_a)})"
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", default=os.path.join(REPO, "build", "apps"))
    parser.add_argument("--models-dir", default=os.path.join(REPO, "onnx_models", "generated"))
    parser.add_argument("--machine", default="2-core development machine, shared")
    parser.add_argument("--models", default=",".join(m for m, _ in MODELS),
                        help="comma-separated subset of the models (default: all)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds an ios-optimize run may take")
    parser.add_argument("--analysis", default=os.path.join(REPO, "docs", "benchmarks", "precision_analysis.md"),
                        help="hand-written analysis carried into the section (skipped when absent)")
    parser.add_argument("--out", default=os.path.join(REPO, "docs", "benchmarks", "precision.md"))
    args = parser.parse_args()
    binary = os.path.join(args.bin_dir, "ios-optimize")
    run_binary = os.path.join(args.bin_dir, "ios-run")
    started = datetime.datetime.now()
    t0 = time.monotonic()
    latency_rows, schedule_rows, compare_rows = [], [], []
    chosen = args.models.split(",")
    for label, file in [m for m in MODELS if m[0] in chosen]:
        model = os.path.join(args.models_dir, file)
        results = {}
        with tempfile.TemporaryDirectory() as work:
            for precision in PRECISIONS:
                results[precision] = {s: optimize(binary, model, precision, s, work, args.timeout)
                                      for s in ("sequential", "ios")}
            # Each precision's IOS schedule replayed at the other (stages
            # transplanted), against that precision's own IOS schedule.
            cross = {}
            for a, b in PAIRS:
                for src, dst in ((a, b), (b, a)):
                    if results[src]["ios"] and results[dst]["ios"]:
                        moved = transplant(results[src]["ios"][1], results[dst]["ios"][1])
                        cross[(src, dst)] = replay(run_binary, model, moved, work, args.timeout) if moved else None
        structures = {}
        for precision in PRECISIONS:
            seq, ios = results[precision]["sequential"], results[precision]["ios"]
            ls = seq[0]["predicted_latency_ms"] if seq else None
            li = ios[0]["predicted_latency_ms"] if ios else None
            search = "timed out"
            if ios:
                blocks = [b for b in ios[0]["blocks"] if "search" in b]
                complete = sum(1 for b in blocks if b["search"] == "complete")
                search = f"{ios[0]['search_ms']:.1f}"
                if complete < len(blocks):
                    search += f" ({complete}/{len(blocks)} blocks complete)"
            cells = [label, precision, f"{ls:.4f}" if ls else "timed out", f"{li:.4f}" if li else "timed out",
                     f"{ls / li:.2f}x" if ls and li else "", search]
            tf32_ios = results["tf32"]["ios"]
            if precision in ("fp16", "bf16") and ios and tf32_ios:
                cells.append(f"{tf32_ios[0]['predicted_latency_ms'] / li:.2f}x")
            else:
                cells.append("")
            latency_rows.append(cells)
            if ios:
                structures[precision], casts = structure(ios[1])
                st = stats(structures[precision])
                schedule_rows.append([label, precision, str(ios[0]["units"]), str(casts), str(st["stages"]),
                                      str(st["wide"]), str(st["merges"]),
                                      f"{st['mean_groups']:.2f} / {st['max_groups']}"])
            else:
                schedule_rows.append([label, precision, "timed out", "", "", "", "", ""])
        row = [label]
        for a, b in PAIRS:
            if a not in structures or b not in structures:
                row += ["timed out", ""]
                continue
            row.append(compare(structures[a], structures[b]))
            if set(structures[a]) == set(structures[b]):
                row.append("")
                continue
            cells = []
            for src, dst in ((a, b), (b, a)):
                own = results[dst]["ios"][0]["predicted_latency_ms"]
                t = cross.get((src, dst))
                cells.append(f"{src} at {dst}: {t:.4f} ({(t / own - 1) * 100:+.1f}%)" if t
                             else f"{src} at {dst}: not replayable" + (" (unit sets differ)" if "unit sets" in row[-1]
                                                                       else ""))
            row.append("; ".join(cells))
        compare_rows.append(row)
    seconds = time.monotonic() - t0
    analysis = ""
    if os.path.exists(args.analysis):
        with open(args.analysis) as f:
            analysis = f.read().strip() + "\n"
    lines = ["## Precision\n",
             f"Written by `bench/precision.py` on {started:%Y-%m-%d} in {seconds / 60:.0f} minutes "
             f"({seconds:.0f} s), {args.machine}. **Predicted, not measured**: batch 1, `--cost simulated` "
             "(GPU simulator, `h100` profile, CUDA graph), every latency the simulator's of the whole lowered "
             "plan; no GPU ran a 16-bit kernel, and the FP16 and BF16 tensor-core rates are the datasheet "
             "peaks times the TF32 fits' efficiency (`docs/cost-model.md`, *Element types*). One "
             "`ios-optimize --precision P` run per cell and scheduler, its defaults otherwise: `fp32` and "
             "`tf32` are the float32 graph's product math, `fp16` and `bf16` convert the graph (sensitive "
             "operators kept float32 with Casts around them, float32 inputs and outputs). `gain` is the "
             "sequential schedule's latency over IOS's at the same precision; `IOS vs tf32` is IOS's tf32 "
             "latency over its latency at this precision; `search ms` is IOS's search (sum over blocks). "
             f"Runs over {args.timeout:.0f} s are reported as timed out. Models as in the summary table "
             "(RandWire at 64x64, NASNet-A Large at 99x99, DeepLabV3 and the detectors at 128x128, "
             "Swin-T at 112x112).\n",
             "| model | precision | sequential ms | IOS ms | gain | search ms | IOS vs tf32 |",
             "|---|---|---:|---:|---:|---:|---:|"]
    lines += ["| " + " | ".join(r) + " |" for r in latency_rows]
    lines += ["",
              "### Does the IOS schedule change with the precision?\n",
              "IOS's schedule at each precision with its Cast units dropped (`<tensor>/to_half`, "
              "`<tensor>/to_float32`, and a float32 graph output's Cast, which keeps the output's name; "
              "`casts` counts them) and renamed output producers (`<name>/half`) mapped back. `units` is the unit graph's size, Casts included; `wide` counts the concurrent "
              "stages with more than one group; `groups` is the mean / largest number of groups per "
              "stage.\n",
              "| model | precision | units | casts | stages | wide | merges | groups mean / max |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += ["| " + " | ".join(r) + " |" for r in schedule_rows]
    lines += ["",
              "Two precisions' schedules compared as sets of stages (strategy and set of groups, each a set "
              "of unit ids). Where they differ, `a / b` counts the stages, merge stages and pairs of units "
              "side by side in a concurrent stage found only in the first / only in the second, and "
              "`replayed` gives each schedule's stages run at the other precision (`ios-run --backend sim`, "
              "the other precision's Casts each right after its producer in its group) against that "
              "precision's own IOS schedule: a positive percentage is what the search at that precision "
              "gained by changing the schedule.\n",
              "| model | tf32 / fp16 | replayed | fp16 / bf16 | replayed | tf32 / fp32 | replayed |",
              "|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in compare_rows]
    if analysis:
        lines += ["", analysis.rstrip()]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
