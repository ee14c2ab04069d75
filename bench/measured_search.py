#!/usr/bin/python3
"""The budgeted measured search against the oracle device (docs/benchmarks.md, "Measured search").

    /usr/bin/python3 bench/measured_search.py [--bin build/bench/ios-bench-measured-search]
        [--budgets 100,200,500,1000,5000] [--sweep 0,0.1,0.2] [--seeds 2,3] [--machine TEXT]
        [--out docs/benchmarks/measured_search.md] [--chart docs/benchmarks/measured_search.png]
        [--from-csv FILE]

Runs ios-bench-measured-search (bench/measured_search_bench.cpp; build it with
`cmake --build build --target ios-bench-measured-search`) on the IOS paper's
four networks and writes the "Measured search" section of docs/benchmarks.md
to --out (bench/harness/run_benchmarks.py carries it into
docs/benchmarks.md), with a chart of each network's curve: questions asked
of the oracle against the oracle latency of the schedule found, relative to
the schedule of the search that measures every stage. With the oracle's
seed 1, the budgets run at the default optimism (0.25) and the largest
budget also at each --sweep optimism; with each of --seeds (other noise),
the largest budget at the default optimism. --from-csv formats a
CSV the benchmark wrote before instead of running it (about 15 minutes on the
2-core development machine).
"""

import argparse
import csv
import datetime
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OPTIMISM = "0.25"  # cost::BudgetOptions::optimism


def run(args, csv_path):
    """Seed 1: the budgets at the default optimism, then the optimism sweep
    at the largest budget. Each --seeds: the largest budget at the default
    optimism. All into one CSV (the repeated full and simulator rows of the
    sweep dropped: the same searches again)."""
    start = time.time()
    largest = args.budgets.split(",")[-1]
    subprocess.run([args.bin, "--csv", csv_path, "--optimism", DEFAULT_OPTIMISM, "--budgets"]
                   + args.budgets.split(","), check=True, stdout=subprocess.DEVNULL)
    extra = []
    for i, (what, cmd) in enumerate(
            [("sweep", ["--budgets", largest, "--optimism"] + args.sweep.split(","))]
            + [("seed", ["--budgets", largest, "--optimism", DEFAULT_OPTIMISM, "--seed", seed])
               for seed in args.seeds.split(",") if seed]):
        part = f"{csv_path}.{i}"
        subprocess.run([args.bin, "--csv", part] + cmd, check=True, stdout=subprocess.DEVNULL)
        with open(part) as f:
            lines = f.readlines()[1:]
        extra += [line for line in lines if what == "seed" or '"budget ' in line]
    with open(csv_path, "a") as f:
        f.writelines(extra)
    return time.time() - start


def pct(a, b):
    return f"{100.0 * (a / b - 1.0):+.2f}%"


def draw(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("measured_search: matplotlib missing (apt-get install python3-matplotlib): no chart",
              file=sys.stderr)
        return False
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for i, model in enumerate(models):
        mine = [r for r in rows if r["model"] == model and r["seed"] == "1"]
        full = next(r for r in mine if r["search"] == "every stage measured")
        budgeted = sorted((r for r in mine if r["search"].startswith("budget")
                           and r["optimism"] == DEFAULT_OPTIMISM),
                          key=lambda r: int(r["questions"]))
        alone = next(r for r in mine if r["search"] == "simulator alone")
        color = plt.get_cmap("tab10")(i)
        xs = [int(r["questions"]) for r in budgeted] + [int(full["questions"])]
        ys = [100.0 * (float(r["oracle_ms"]) / float(full["oracle_ms"]) - 1.0) for r in budgeted] + [0.0]
        ax.plot(xs, ys, marker="o", color=color, label=model)
        ax.axhline(100.0 * (float(alone["oracle_ms"]) / float(full["oracle_ms"]) - 1.0), color=color,
                   linestyle=":", linewidth=1)
    ax.axhline(2.0, color="grey", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("questions asked of the oracle (stages measured)")
    ax.set_ylabel("schedule's oracle latency vs measuring every stage (%)")
    ax.set_title("Budgeted measured search (dotted: the simulator alone; dashed: +2%)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(REPO, "build", "bench", "ios-bench-measured-search"))
    p.add_argument("--budgets", default="100,200,500,1000,5000")
    p.add_argument("--sweep", default="0,0.1,0.2", help="optimism values tried at the largest budget (seed 1)")
    p.add_argument("--seeds", default="2,3", help="other oracle seeds, at the largest budget")
    p.add_argument("--machine", default="2-core development machine, shared")
    p.add_argument("--out", default=os.path.join(REPO, "docs", "benchmarks", "measured_search.md"))
    p.add_argument("--chart", default=os.path.join(REPO, "docs", "benchmarks", "measured_search.png"))
    p.add_argument("--from-csv")
    args = p.parse_args()

    seconds = None
    if args.from_csv:
        csv_path = args.from_csv
    else:
        csv_path = os.path.join(tempfile.mkdtemp(prefix="ios-measured-search-"), "rows.csv")
        seconds = run(args, csv_path)
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))

    L = ["## Measured search\n"]
    took = f" in {seconds / 60:.0f} minutes" if seconds else ""
    L.append(
        f"Written by `bench/measured_search.py` on {datetime.date.today()}{took}, {args.machine}; no GPU: "
        "the oracle device (`lib/cost/oracle_device.h`) plays it. The oracle is the GPU simulator with a "
        "hidden profile (the search's `h100` profile with slower compute, faster memory, dearer launches and "
        "event waits, more interference and cache contention, whole waves, Winograd 3x3 and weak 1xk "
        "convolutions) times a reproducible factor per stage, uniform within +/-20%. Each row is one IOS "
        "search (r=3, s=8, one thread, no time limit) with a fresh oracle: `every stage measured` is "
        "`--cost measured --profile-budget all`, `budget N` the budgeted search (`lib/cost/budgeted.h`, "
        "optimism 0.25 unless the row says otherwise), `simulator alone` the search on the `h100` profile with no question asked. "
        "Questions are distinct stages asked of the oracle; the oracle latency is the sum of the chosen "
        "stages' oracle latencies (what the search minimises), and `vs full` compares it with the first "
        "row's. `predicted stages kept`: stages of the schedule left with predicted latencies because the "
        "budget ran out. The per-network tables and the chart use the oracle's seed 1 (its noise); the last table repeats the default search with other seeds. The curve in the chart is optimism 0.25. RandWire at 64x64 and NASNet-A Large at 99x99 (the same graphs as at 224 and "
        "331).\n")
    L.append("![Questions against the schedule's oracle latency](benchmarks/measured_search.png)\n")
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model and r["seed"] == "1"]
        # The full search, the budgets (default optimism), the optimism sweep, the simulator alone.
        mine.sort(key=lambda r: (r["search"] == "simulator alone", r["search"].startswith("budget"),
                                 -float(r["optimism"]) if r["search"].startswith("budget") else 0.0,
                                 int(r["budget"]) if r["budget"].isdigit() else 0))
        full = next(r for r in mine if r["search"] == "every stage measured")
        L.append(f"### {model}, batch {full['batch']}\n")
        L.append("| search | questions | of full | oracle latency (ms) | vs full | predicted stages kept | search s |")
        L.append("|---|---:|---:|---:|---:|---:|---:|")
        for r in mine:
            share = 100.0 * int(r["questions"]) / int(full["questions"])
            L.append(f"| {r['search']} | {int(r['questions']):,} | {share:.1f}% | {float(r['oracle_ms']):.4f} | "
                     f"{pct(float(r['oracle_ms']), float(full['oracle_ms']))} | {r['predicted_stages_kept']} | "
                     f"{float(r['seconds']):.1f} |")
        L.append("")
    seeds = sorted({r["seed"] for r in rows}, key=int)
    if len(seeds) > 1:
        L.append("### Other seeds of the oracle's noise\n")
        L.append(f"The default search (budget {args.budgets.split(',')[-1]}, optimism {DEFAULT_OPTIMISM}) against "
                 "the oracle with each seed: the same hidden profile, other noise.\n")
        L.append("| model | seed | full: questions | budgeted: questions | of full | vs full | simulator alone vs full |")
        L.append("|---|---:|---:|---:|---:|---:|---:|")
        for model in dict.fromkeys(r["model"] for r in rows):
            for seed in seeds:
                mine = [r for r in rows if r["model"] == model and r["seed"] == seed]
                full = next((r for r in mine if r["search"] == "every stage measured"), None)
                alone = next((r for r in mine if r["search"] == "simulator alone"), None)
                budgeted = [r for r in mine if r["search"].startswith("budget") and r["optimism"] == DEFAULT_OPTIMISM
                            and r["budget"] == args.budgets.split(",")[-1]]
                if not (full and alone and budgeted):
                    continue
                b = budgeted[0]
                L.append(f"| {model} | {seed} | {int(full['questions']):,} | {int(b['questions']):,} | "
                         f"{100.0 * int(b['questions']) / int(full['questions']):.1f}% | "
                         f"{pct(float(b['oracle_ms']), float(full['oracle_ms']))} | "
                         f"{pct(float(alone['oracle_ms']), float(full['oracle_ms']))} |")
        L.append("")
    text = "\n".join(L).rstrip() + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    if not draw(rows, args.chart):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
