#!/usr/bin/python3
"""Latency against peak memory under ios-optimize --memory-limit (docs/benchmarks.md, "Memory").

    /usr/bin/python3 bench/memory.py [--bin-dir build/apps] [--machine TEXT]
                                     [--out docs/benchmarks/memory.md]

Writes the "Memory" section of docs/benchmarks.md to --out (which
bench/harness/run_benchmarks.py carries into docs/benchmarks.md) and its
chart beside it (memory_tradeoff.svg, drawn without matplotlib). For the IOS
paper's four networks and two detectors, at batch 1 with the simulated cost
model (h100 profile: predicted latencies, predicted workspaces), it runs the
sequential schedule and IOS without a limit, then IOS under limits spread
from the unconstrained peak down to the sequential schedule's: each row is
one ios-optimize run with its defaults, and gives the predicted latency of
the whole lowered plan, the schedule's peak (exec/schedule_memory.h), how the
limit was met and the search time against the unconstrained search's.
"""

import argparse
import datetime
import json
import os
import subprocess
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["inception_v3-bdyn", "squeezenet1_1-bdyn", "randwire-bdyn-64x64", "nasnet_a_large-bdyn-99x99",
          "retinanet_resnet50_fpn-128x128", "ssdlite320_mobilenet_v3_large"]
FRACTIONS = [0.75, 0.5, 0.25, 0.0]  # of the way from the sequential peak to the unconstrained one
MIB = 1024.0 * 1024.0


def optimize(binary, model, extra, work):
    report = os.path.join(work, "report.json")
    subprocess.run([binary, model, "--batch", "1", "--cost", "simulated", "--quiet",
                    "-o", os.path.join(work, "s.json"), "--report-json", report] + extra,
                   check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        return json.load(f)


def svg_chart(series, path):
    """One line per model: x the peak between the sequential schedule's (0) and the
    unconstrained one's (1), y the latency against the sequential schedule's."""
    w, h, left, bottom, top, right = 700, 400, 60, 50, 20, 230
    pw, ph = w - left - right, h - top - bottom
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>']
    def x_of(v):
        return left + pw * max(0.0, min(1.05, v)) / 1.05
    def y_of(v):
        return top + ph * (1.0 - max(0.0, min(1.05, v)) / 1.05)
    for i in range(6):
        t = i / 5
        out.append(f'<line x1="{x_of(t):.1f}" y1="{top}" x2="{x_of(t):.1f}" y2="{top + ph}" stroke="#ddd"/>')
        out.append(f'<text x="{x_of(t):.1f}" y="{top + ph + 15}" text-anchor="middle">{t:.1f}</text>')
        out.append(f'<line x1="{left}" y1="{y_of(t):.1f}" x2="{left + pw}" y2="{y_of(t):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y_of(t) + 4:.1f}" text-anchor="end">{t:.1f}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{h - 12}" text-anchor="middle">peak above the sequential schedule\'s, '
               'as a share of the unconstrained IOS schedule\'s excess</text>')
    out.append(f'<text transform="translate(14,{top + ph / 2}) rotate(-90)" text-anchor="middle">'
               'predicted latency / sequential</text>')
    for k, (name, points) in enumerate(series):
        c = colors[k % len(colors)]
        pts = " ".join(f"{x_of(x):.1f},{y_of(y):.1f}" for x, y in sorted(points))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"/>')
        for x, y in points:
            out.append(f'<circle cx="{x_of(x):.1f}" cy="{y_of(y):.1f}" r="3" fill="{c}"/>')
        out.append(f'<rect x="{left + pw + 12}" y="{top + 14 * k}" width="10" height="10" fill="{c}"/>')
        out.append(f'<text x="{left + pw + 26}" y="{top + 14 * k + 9}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", default=os.path.join(REPO, "build", "apps"))
    parser.add_argument("--models-dir", default=os.path.join(REPO, "onnx_models", "generated"))
    parser.add_argument("--machine", default="2-core development machine, shared")
    parser.add_argument("--out", default=os.path.join(REPO, "docs", "benchmarks", "memory.md"))
    args = parser.parse_args()
    binary = os.path.join(args.bin_dir, "ios-optimize")
    started = datetime.datetime.now()
    rows, series = [], []
    with tempfile.TemporaryDirectory() as work:
        for name in MODELS:
            model = os.path.join(args.models_dir, name + ".onnx")
            seq = optimize(binary, model, ["--scheduler", "sequential"], work)
            free = optimize(binary, model, [], work)
            ps, pu = seq["memory"]["peak_bytes"], free["memory"]["peak_bytes"]
            ls, lu = seq["predicted_latency_ms"], free["predicted_latency_ms"]
            short = name.split("-")[0]
            points = [(0.0, 1.0), (1.0, lu / ls)] if pu > ps else [(0.0, lu / ls)]
            rows.append([short, "sequential", "", f"{ls:.4f}", f"{ps / MIB:.2f}", f"{seq['memory']['arena_bytes'] / MIB:.2f}",
                         "", ""])
            rows.append([short, "ios", "none", f"{lu:.4f}", f"{pu / MIB:.2f}", f"{free['memory']['arena_bytes'] / MIB:.2f}",
                         "", f"{free['search_ms']:.0f}"])
            if pu <= ps:
                continue
            for fraction in FRACTIONS:
                limit = int(ps + fraction * (pu - ps))
                r = optimize(binary, model, ["--memory-limit", str(limit)], work)
                m = r["memory"]
                points.append(((m["peak_bytes"] - ps) / (pu - ps), r["predicted_latency_ms"] / ls))
                rows.append([short, "ios", f"{limit / MIB:.2f} ({fraction:.2f})", f"{r['predicted_latency_ms']:.4f}",
                             f"{m['peak_bytes'] / MIB:.2f}", f"{m['arena_bytes'] / MIB:.2f}", m.get("note", ""),
                             f"{r['search_ms']:.0f} ({r['search_ms'] / max(free['search_ms'], 1e-9):.1f}x)"])
            series.append((short, points))
    svg_chart(series, os.path.join(os.path.dirname(args.out), "memory_tradeoff.svg"))
    minutes = (datetime.datetime.now() - started).total_seconds() / 60
    lines = ["## Memory\n",
             f"Written by `bench/memory.py` on {started:%Y-%m-%d} in {minutes:.0f} minutes, {args.machine}. "
             "Predicted, batch 1, `--cost simulated` (`h100` profile, CUDA graph, TF32): latencies are the GPU "
             "simulator's of the whole lowered plan, peaks are `exec::schedule_memory`'s (activation arena, "
             "weights with merged weights, one predicted workspace per stream; no GPU measured them). Each "
             "`ios` row under a limit is one `ios-optimize --memory-limit` run with its defaults; the limit's "
             "fraction is its place between the sequential schedule's peak (0) and the unconstrained IOS "
             "schedule's (1). `search ms` is the searches' own time (the unconstrained search's, then under "
             "the limit all rounds' and the sequential schedule's; in brackets the ratio). RandWire at 64x64, "
             "NASNet-A Large at 99x99, the detectors at their exported sizes. Weights dominate every peak at "
             "batch 1, so the trade-off is in a few MiB of activations and workspaces.\n",
             "![Predicted latency against peak memory](benchmarks/memory_tradeoff.svg)\n",
             "| model | scheduler | limit MiB (fraction) | latency (ms) | peak MiB | arena MiB | how | search ms |",
             "|---|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
