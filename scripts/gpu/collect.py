#!/usr/bin/env python3
"""Gathers the GPU kit's timings into OUT/timings.json and OUT/bench.md.

    scripts/gpu/collect.py WORK OUT PACK

Called by scripts/gpu/first-run.sh after every phase (so that a kill keeps
what was measured). Reads, under WORK/results:
  times/NAME-graph.json, times/NAME-plain.json   ios-run --export-times
  times/peers.json, times/peers-compile.json      bench/harness/peers.py
  reports/MODEL.measured-{cold,warm}.json         ios-optimize --report-json
and, under PACK, every prepared schedule's predicted latency (the GPU
simulator on the h100 and h200 profiles), so each measured row has the
prediction beside it. Standard library only: runs with any python3.
"""

import glob
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def summary_of(s):
    if not s:
        return None
    return {k: s.get(k) for k in ("count", "median_ms", "mean_ms", "min_ms", "p90_ms", "p99_ms", "cv")}


def main():
    work, out, pack = sys.argv[1:4]
    results = os.path.join(work, "results")
    env = ""
    try:
        with open(os.path.join(results, "env.txt")) as f:
            env = f.read()
    except OSError:
        pass
    device = next((l.split(":", 1)[1].strip() for l in env.splitlines() if l.startswith("gpu:")), "unknown")
    profile = open(os.path.join(work, "profile")).read().strip() if os.path.exists(os.path.join(work, "profile")) else None
    doc = {"format": "ios-gpu-kit-timings", "version": 1, "device": device, "simulator_profile": profile,
           "networks": {}, "measured_search": []}

    # Predictions of every prepared schedule, per profile.
    for path in sorted(glob.glob(os.path.join(pack, "schedules", "*", "*", "*.json"))):
        prof, net, label = path.split(os.sep)[-3], path.split(os.sep)[-2], os.path.basename(path)[:-5]
        s = load(path)
        if s is None:
            continue
        entry = doc["networks"].setdefault(net, {"schedules": {}, "peers": {}})
        entry["schedules"].setdefault(label, {})[f"predicted_ms_{prof}"] = s.get("predicted_latency_ms")

    # ios-run's timings.
    for path in sorted(glob.glob(os.path.join(results, "times", "*-graph.json")) +
                       glob.glob(os.path.join(results, "times", "*-plain.json"))):
        base = os.path.basename(path)[:-5]
        net, launch = base.rsplit("-", 1)
        t = load(path)
        if not t:
            continue
        entry = doc["networks"].setdefault(net, {"schedules": {}, "peers": {}})
        for run in t.get("runs", []):
            row = entry["schedules"].setdefault(run["name"], {})
            row[launch] = {"metric": run.get("latency_metric"), "backend": run.get("backend"),
                           "gpu_compute": summary_of(run.get("summary")),
                           "end_to_end": summary_of(run.get("end_to_end_summary"))}

    # PyTorch's peers.
    for name in ("peers.json", "peers-compile.json"):
        p = load(os.path.join(results, "times", name))
        if not p:
            continue
        doc.setdefault("peer_versions", p.get("versions"))
        for r in p.get("results", []):
            net_files = [n for n in doc["networks"] if n.split("-")[0] == r["model"]]
            net = net_files[0] if net_files else r["model"]
            entry = doc["networks"].setdefault(net, {"schedules": {}, "peers": {}})
            b = r.get("batches", {}).get("1", {})
            entry["peers"][r["mode"]] = {"gpu_compute": summary_of(b.get("summary")),
                                         "end_to_end": summary_of(b.get("end_to_end_summary")),
                                         "error": r.get("error") or b.get("error")}

    # The measured searches.
    for path in sorted(glob.glob(os.path.join(results, "reports", "*.measured-*.json"))):
        rep = load(path)
        if rep is None:
            continue
        model, state = os.path.basename(path)[:-5].split(".measured-")
        doc["measured_search"].append({"model": model, "database": state, "report": rep})

    tmp = os.path.join(out, "timings.json.partial")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, os.path.join(out, "timings.json"))

    # bench.md: one table per network.
    lines = [f"# GPU kit timings: {device}", "",
             "Median per inference, batch 1, TF32. GPU compute: CUDA events between iterations queued back to "
             "back; end-to-end: single iterations on an idle GPU, input upload to output download (ios-run and "
             "bench/harness/peers.py measure both the same way). Predicted: the GPU simulator on the "
             f"`{profile}` profile, for the same schedule.", ""]

    def ms(x):
        return f"{x:.4f}" if isinstance(x, (int, float)) else "—"

    for net, entry in sorted(doc["networks"].items()):
        lines += [f"## {net}", "",
                  "| schedule | predicted ms | GPU compute ms (graph) | GPU compute ms (plain) | end-to-end ms (graph) | vs sequential (graph) |",
                  "| --- | --- | --- | --- | --- | --- |"]
        seq = entry["schedules"].get("sequential", {}).get("graph", {}).get("gpu_compute") or {}
        for label, row in sorted(entry["schedules"].items(), key=lambda kv: (kv[0] != "sequential", kv[0])):
            g = (row.get("graph") or {}).get("gpu_compute") or {}
            p = (row.get("plain") or {}).get("gpu_compute") or {}
            e = (row.get("graph") or {}).get("end_to_end") or {}
            ratio = (f"{seq['median_ms'] / g['median_ms']:.2f}x"
                     if seq.get("median_ms") and g.get("median_ms") else "—")
            lines.append(f"| {label} | {ms(row.get(f'predicted_ms_{profile}'))} | {ms(g.get('median_ms'))} | "
                         f"{ms(p.get('median_ms'))} | {ms(e.get('median_ms'))} | {ratio} |")
        for mode, peer in sorted(entry["peers"].items()):
            g = peer.get("gpu_compute") or {}
            e = peer.get("end_to_end") or {}
            ratio = (f"{seq['median_ms'] / g['median_ms']:.2f}x"
                     if seq.get("median_ms") and g.get("median_ms") else "—")
            what = ms(g.get("median_ms")) if g else f"not run: {peer.get('error') or 'no result'}"
            lines.append(f"| PyTorch {mode} | — | {what} | — | {ms(e.get('median_ms'))} | {ratio} |")
        lines.append("")
    if doc["measured_search"]:
        lines += ["## Measured IOS search", "",
                  "| model | database | search s | measuring s | stages measured | reused | predicted ms | sequential ms |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for m in doc["measured_search"]:
            r = m["report"]
            meas = r.get("measurement") or {}
            search_s = r["search_ms"] / 1000.0 if isinstance(r.get("search_ms"), (int, float)) else None
            lines.append(f"| {m['model']} | {m['database']} | {ms(search_s)} | {ms(meas.get('elapsed_s'))} | "
                         f"{meas.get('measured', '—')} | "
                         f"{(meas.get('budget') or {}).get('reused', meas.get('cache_hits', '—'))} | "
                         f"{ms(r.get('predicted_latency_ms'))} | {ms(r.get('sequential_predicted_ms'))} |")
        lines.append("")
    tmp = os.path.join(out, "bench.md.partial")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, os.path.join(out, "bench.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
