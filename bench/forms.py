#!/usr/bin/python3
"""IOS's stages with and without barriers, beside LIOS and Nimble (docs/benchmarks.md, "Forms").

    /usr/bin/python3 bench/forms.py [--bin-dir build/apps] [--batches 1,32]
                                    [--machine TEXT] [--out docs/benchmarks/forms.md]

Writes the "Forms" section of docs/benchmarks.md to --out (which
bench/harness/run_benchmarks.py carries into docs/benchmarks.md). For each of
the IOS paper's four networks and each batch it runs ios-optimize --cost
simulated (h100 profile) once with `--scheduler ios --form best`, whose
report gives the predicted latency of the IOS schedule with its stage
barriers (`staged`), without them (`streamed`: only true dependencies) and
the form kept (`best`), and once with each of greedy, lios, nimble and
sequential. Every number is the GPU simulator's latency of the whole lowered
plan, so the columns compare.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["inception_v3-bdyn", "squeezenet1_1-bdyn", "randwire-bdyn-64x64", "nasnet_a_large-bdyn-99x99"]
BASELINES = ["greedy", "lios", "nimble", "sequential"]


def optimize(binary, model, batch, extra, work):
    report = os.path.join(work, "report.json")
    subprocess.run([binary, model, "--batch", str(batch), "--cost", "simulated", "--quiet",
                    "-o", os.path.join(work, "s.json"), "--report-json", report] + extra,
                   check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=os.path.join(REPO, "build", "apps"))
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--machine", default="2-core development machine")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "benchmarks", "forms.md"))
    args = ap.parse_args()
    binary = os.path.join(args.bin_dir, "ios-optimize")
    work = tempfile.mkdtemp(prefix="ios-forms-")
    rows = []
    for name in MODELS:
        model = os.path.join(REPO, "onnx_models", "generated", name + ".onnx")
        for batch in [int(b) for b in args.batches.split(",")]:
            ios = optimize(binary, model, batch, ["--form", "best"], work)
            form = ios["form"]
            ms = {b: optimize(binary, model, batch, ["--scheduler", b], work)["predicted_latency_ms"]
                  for b in BASELINES}
            fastest_streamed = min(ms["lios"], ms["nimble"])
            gap = lambda ios_ms: f"{100.0 * (ios_ms / fastest_streamed - 1.0):+.1f}%"
            rows.append(f"| {name.split('-bdyn')[0]} | {batch} | {form['staged_predicted_ms']:.4f} | "
                        f"{form['streamed_predicted_ms']:.4f} | {ios['predicted_latency_ms']:.4f} ({form['chosen']}) | "
                        f"{ms['lios']:.4f} | {ms['nimble']:.4f} | {ms['greedy']:.4f} | {ms['sequential']:.4f} | "
                        f"{gap(form['staged_predicted_ms'])} / {gap(ios['predicted_latency_ms'])} |")
            print(rows[-1], flush=True)
    head = [
        "## Forms",
        "",
        f"Written by `bench/forms.py` on {datetime.date.today().isoformat()}, {args.machine}. Predicted "
        "latencies in ms of the GPU simulator (`h100` profile, CUDA graph, TF32; no GPU measured these), "
        "each the whole lowered plan of one `ios-optimize --cost simulated` run: IOS's schedule with its "
        "stage barriers (`staged`), the same stages with only their true dependencies (`streamed`), what "
        "`--form best` keeps, and the other schedulers. The last column is IOS staged and IOS best against "
        "the faster of LIOS and Nimble (negative: IOS is faster). Models as in the table above "
        "(RandWire at 64x64, NASNet-A Large at 99x99).",
        "",
        "| model | batch | ios staged | ios streamed | ios --form best | lios | nimble | greedy | sequential "
        "| ios staged / best vs best streamed scheduler |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(head + rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
