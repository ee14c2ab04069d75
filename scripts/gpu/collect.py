#!/usr/bin/env python3
"""Gathers the GPU kit's timings into OUT/timings.json and OUT/bench.md.

    scripts/gpu/collect.py WORK OUT PACK

Called by scripts/gpu/first-run.sh after every phase (so that a kill keeps
what was measured). Reads, under WORK/results (every file optional):
  times/NAME-graph.json, times/NAME-plain.json   ios-run --export-times (TF32, batch 1)
  times/NAME-VARIANT-graph.json                   the same at another precision or batch:
                                                  VARIANT fp16, bf16, fp32, tf32, or bN-PREC
                                                  (b16-tf32, b16-fp16, ...): batch N
  times/NAME-repeatN-graph.json                   N = 1, 2, 3: the same schedules in three
                                                  ios-run calls (run-to-run spread)
  times/peers*.json                               bench/harness/peers.py (peers.json,
                                                  peers-compile.json, ...: every precision
                                                  and batch they hold; version 1 or 2)
  times/layers-NAME-PREC.json                     bench/harness/layers.py torch (PREC tf32,
                                                  fp32, fp16 or bf16), joined with
  traces/NAME-PREC-layers.json                    ios-run --trace of NAME's sequential
                                                  schedule at PREC (every process of it on
                                                  one stream); when there is none, the
                                                  process labelled sequential of the timing
                                                  run's trace, traces/NAME-graph.json (tf32)
                                                  or traces/NAME-PREC-graph.json
  reports/MODEL.measured-{cold,warm}.json         ios-optimize --report-json
and, under PACK, every prepared schedule's predicted latency (the GPU
simulator on the h100 and h200 profiles), so each measured row has the
prediction beside it. The precision and batch of an ios-run export are the
ones its runs record (the file name's when they record none). Standard
library only: runs with any python3 (the per-layer join is
bench/harness/layers.py's, whose `table` half is standard library too).
"""

import glob
import json
import os
import re
import sys

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PRECISIONS = ("tf32", "fp32", "fp16", "bf16")
# NAME-LAUNCH, NAME-VARIANT-LAUNCH, NAME-repeatN-LAUNCH (NAME itself has dashes).
EXPORT = re.compile(r"^(?P<net>.+?)(?:-(?P<variant>(?:b(?P<batch>\d+)-)?(?P<prec>tf32|fp32|fp16|bf16)|b(?P<bonly>\d+)"
                    r"|repeat(?P<repeat>\d+)))?-(?P<launch>graph|plain)\.json$")
LAYERS = re.compile(r"^layers-(?P<net>.+)-(?P<prec>tf32|fp32|fp16|bf16)\.json$")


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


def ms(x):
    return f"{x:.4f}" if isinstance(x, (int, float)) else "—"


def combo(prec, batch):
    return f"{prec}-b{batch}"


def parse_combo(key):
    prec, batch = key.rsplit("-b", 1)
    return prec, int(batch)


def combo_order(key):
    prec, batch = parse_combo(key)
    return (batch, PRECISIONS.index(prec) if prec in PRECISIONS else 9, prec)


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
    doc = {"format": "ios-gpu-kit-timings", "version": 2, "device": device, "simulator_profile": profile,
           "networks": {}, "measured_search": [], "layers": {}}

    def network(net):
        return doc["networks"].setdefault(net, {"schedules": {}, "peers": {}})

    # Predictions of every prepared schedule, per profile.
    for path in sorted(glob.glob(os.path.join(pack, "schedules", "*", "*", "*.json"))):
        prof, net, label = path.split(os.sep)[-3], path.split(os.sep)[-2], os.path.basename(path)[:-5]
        s = load(path)
        if s is None:
            continue
        network(net)["schedules"].setdefault(label, {})[f"predicted_ms_{prof}"] = s.get("predicted_latency_ms")

    # ios-run's timings: the TF32 batch-1 exports (graph and plain), the
    # other precisions and batches, the repeated calls.
    for path in sorted(glob.glob(os.path.join(results, "times", "*-graph.json")) +
                       glob.glob(os.path.join(results, "times", "*-plain.json"))):
        m = EXPORT.match(os.path.basename(path))
        t = load(path)
        if not m or not t:
            continue
        net, launch = m["net"], m["launch"]
        entry = network(net)
        if m["repeat"]:
            if launch != "graph":
                continue
            calls = entry.setdefault("repeats", {})
            for run in t.get("runs", []):
                med = (run.get("summary") or {}).get("median_ms")
                if med is not None:
                    calls.setdefault(run["name"], {})[m["repeat"]] = med
            continue
        if m["variant"]:
            if launch != "graph":
                continue
            by = entry.setdefault("by_precision", {})
            for run in t.get("runs", []):
                prec = run.get("precision") or m["prec"] or "tf32"
                batch = run.get("batch") or int(m["batch"] or m["bonly"] or 1)
                by.setdefault(combo(prec, batch), {})[run["name"]] = {
                    "gpu_compute": summary_of(run.get("summary")),
                    "end_to_end": summary_of(run.get("end_to_end_summary")), "file": os.path.basename(path)}
            continue
        for run in t.get("runs", []):
            row = entry["schedules"].setdefault(run["name"], {})
            row[launch] = {"metric": run.get("latency_metric"), "backend": run.get("backend"),
                           "precision": run.get("precision"), "batch": run.get("batch"),
                           "gpu_compute": summary_of(run.get("summary")),
                           "end_to_end": summary_of(run.get("end_to_end_summary"))}
            if launch == "graph":
                key = combo(run.get("precision") or "tf32", run.get("batch") or 1)
                entry.setdefault("by_precision", {}).setdefault(key, {}).setdefault(run["name"], {
                    "gpu_compute": summary_of(run.get("summary")),
                    "end_to_end": summary_of(run.get("end_to_end_summary")), "file": os.path.basename(path)})

    # PyTorch's peers (version 1: one precision, the document's; version 2:
    # each result names its own). A CPU smoke run (the dry run's) is no peer.
    for path in sorted(glob.glob(os.path.join(results, "times", "peers*.json"))):
        p = load(path)
        if not p:
            continue
        if p.get("smoke"):
            doc["peers_smoke"] = True
            continue
        doc.setdefault("peer_versions", p.get("versions"))
        for r in p.get("results", []):
            net_files = [n for n in doc["networks"] if n.split("-")[0] == r["model"]]
            net = net_files[0] if net_files else r["model"]
            entry = network(net)
            prec = r.get("precision") or p.get("precision") or "tf32"
            for batch, b in sorted(r.get("batches", {}).items(), key=lambda kv: int(kv[0])):
                peer = {"gpu_compute": summary_of(b.get("summary")),
                        "end_to_end": summary_of(b.get("end_to_end_summary")),
                        "error": b.get("error") or (r.get("error") if not b.get("summary") else None)}
                entry.setdefault("peers_by_precision", {}).setdefault(combo(prec, int(batch)), {})[r["mode"]] = peer
                if prec == "tf32" and batch == "1":
                    entry["peers"][r["mode"]] = peer
            if not r.get("batches") and r.get("error"):
                peer = {"gpu_compute": None, "end_to_end": None, "error": r["error"]}
                entry.setdefault("peers_by_precision", {}).setdefault(combo(prec, 1), {})[r["mode"]] = peer
                if prec == "tf32":
                    entry["peers"][r["mode"]] = peer

    # The per-layer tables: PyTorch's layers joined with ios's trace.
    for path in sorted(glob.glob(os.path.join(results, "times", "layers-*.json"))):
        m = LAYERS.match(os.path.basename(path))
        if not m:
            continue
        key = f"{m['net']}-{m['prec']}"
        # The per-layer trace of the sequential schedule; else the sequential
        # schedule's process in the timing run's trace at that precision.
        traces = [(os.path.join(results, "traces", f"{m['net']}-{m['prec']}-layers.json"), None),
                  (os.path.join(results, "traces", f"{m['net']}-graph.json" if m["prec"] == "tf32"
                                else f"{m['net']}-{m['prec']}-graph.json"), ["sequential"])]
        trace, schedules = next((t for t in traces if os.path.isfile(t[0])), traces[0])
        item = {"network": m["net"], "precision": m["prec"], "layers_file": os.path.basename(path),
                "trace_file": os.path.basename(trace)}
        layers_doc = load(path)
        try:
            sys.path.insert(0, os.path.join(REPO, "bench", "harness"))
            import layers as layer_table
            if layers_doc is None:
                raise ValueError(f"{os.path.basename(path)} is not JSON (cut short?)")
            if not os.path.isfile(trace):
                raise ValueError(f"no ios trace {os.path.basename(trace)}")
            table = layer_table.join(layers_doc, layer_table.read_trace(trace, schedules))
            item.update({"batch": layers_doc.get("batch"), "summary": table["summary"], "rows": table["rows"],
                         "ios_backend": table.get("ios_backend"), "ios_processes": table.get("ios_processes"),
                         "torch_smoke": bool(layers_doc.get("smoke"))})
        except Exception as e:  # one table failing leaves the others
            item["error"] = f"{type(e).__name__}: {e}"[:300]
        doc["layers"][key] = item

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

    tmp = os.path.join(out, "bench.md.partial")
    with open(tmp, "w") as f:
        f.write("\n".join(bench_md(doc, device, profile)) + "\n")
    os.replace(tmp, os.path.join(out, "bench.md"))
    return 0


def bench_md(doc, device, profile):
    lines = [f"# GPU kit timings: {device}", "",
             "Median per inference, batch 1, TF32 unless a table says otherwise. GPU compute: CUDA events between "
             "iterations queued back to back; end-to-end: single iterations on an idle GPU, input upload to output "
             "download (ios-run and bench/harness/peers.py measure both the same way). Predicted: the GPU simulator "
             f"on the `{profile}` profile, for the same schedule.", ""]
    lines += precision_table(doc)
    for net, entry in sorted(doc["networks"].items()):
        if not entry["schedules"] and not entry["peers"]:
            continue
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
    lines += repeat_table(doc)
    lines += layer_table(doc)
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
    return lines


def precision_table(doc):
    """One row per network, precision and batch: ios's sequential and best
    schedule beside PyTorch's CUDA graph and eager (CUDA-graph launches)."""
    rows = []
    for net, entry in sorted(doc["networks"].items()):
        ios = entry.get("by_precision", {})
        torch = entry.get("peers_by_precision", {})
        for key in sorted(set(ios) | set(torch), key=combo_order):
            prec, batch = parse_combo(key)
            runs = {name: (r.get("gpu_compute") or {}).get("median_ms") for name, r in ios.get(key, {}).items()}
            runs = {k: v for k, v in runs.items() if v}
            seq = runs.get("sequential")
            best = min(runs.items(), key=lambda kv: kv[1]) if runs else None
            peers = torch.get(key, {})

            def peer(mode):
                p = peers.get(mode)
                if not p:
                    return "—"
                g = (p.get("gpu_compute") or {}).get("median_ms")
                why = p.get("error") or "no result"
                return ms(g) if g else (why if why.startswith("not run") else f"not run: {why}")[:70]

            graph = ((peers.get("cuda_graph") or {}).get("gpu_compute") or {}).get("median_ms")
            ratio = f"{graph / best[1]:.2f}x" if graph and best else "—"
            rows.append(f"| {net} | {prec.upper()} | {batch} | {ms(seq)} | "
                        + (f"{ms(best[1])} ({best[0]})" if best else "—")
                        + f" | {peer('cuda_graph')} | {peer('eager')} | {ratio} |")
    if not rows:
        return []
    return ["## Precision and batch", "",
            "GPU compute, median ms per inference (of the whole batch), ios with CUDA-graph launches; PyTorch as "
            "bench/harness/peers.py runs it (16-bit: model and input in the type, channels-last). The last column "
            "is PyTorch's CUDA graph time over ios's best: above 1.00x ios is faster.", "",
            "| network | precision | batch | ios sequential | ios best (schedule) | PyTorch CUDA graph | PyTorch eager | "
            "PyTorch graph / ios best |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"] + rows + [""]


def repeat_table(doc):
    found = [(net, label, calls) for net, entry in sorted(doc["networks"].items())
             for label, calls in sorted(entry.get("repeats", {}).items(),
                                        key=lambda kv: (kv[0] != "sequential", kv[0]))]
    if not found:
        return []
    n = max([3] + [int(c) for _, _, calls in found for c in calls])
    lines = ["## Run to run", "",
             "The same schedules in separate ios-run calls (times/NAME-repeatN-graph.json): each call's median GPU "
             "compute time (CUDA graph), and the spread, slowest call over fastest.", "",
             "| network | schedule | " + " | ".join(f"call {i} ms" for i in range(1, n + 1)) + " | spread (max/min) |",
             "| --- | --- | " + "--- | " * n + "--- |"]
    for net, label, calls in found:
        values = list(calls.values())
        spread = f"{max(values) / min(values):.2f}x" if len(values) > 1 and min(values) > 0 else "—"
        lines.append(f"| {net} | {label} | " + " | ".join(ms(calls.get(str(i))) for i in range(1, n + 1))
                     + f" | {spread} |")
    return lines + [""]


def layer_table(doc):
    if not doc.get("layers"):
        return []
    lines = ["## Per layer: ios against PyTorch", "",
             "Each convolution and matrix product with the element-wise work ios fuses into it "
             "(bench/harness/layers.py): PyTorch's layer alone, a CUDA graph of 10 calls replayed (median), "
             "against the same unit's launch in ios-run's trace of the sequential schedule (median over the "
             "schedule's copies). Ratio: ios over PyTorch, above 1 ios is slower. After an idle GPU: ios launches "
             "whose trace span began after the GPU had waited for the host, so the span may include launch time "
             "(`layers.py table TIMES TRACE --md` prints every layer).", "",
             "| network | precision | layers matched | convolutions within 1.15x | slower than 2x | after an idle GPU "
             "| sum ios ms | sum PyTorch ms | worst layers (ratio) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for key, item in sorted(doc["layers"].items()):
        if "error" in item:
            lines.append(f"| {item['network']} | {item['precision'].upper()} | not joined: {item['error'][:120]} "
                         "| — | — | — | — | — | — |")
            continue
        s = item["summary"]
        frac = s.get("fraction_convolutions_within_1.15x")
        within = (f"{s['convolutions_within_1.15x']} of {s['convolutions_matched']}"
                  + (f" ({100 * frac:.0f}%)" if frac is not None else ""))
        worst = ", ".join(f"{w['name']} {w['shape']} ({w['ratio']:.2f}x)" for w in s.get("worst", [])[:3]) or "—"
        note = " (PyTorch not timed: CPU smoke)" if item.get("torch_smoke") else ""
        lines.append(f"| {item['network']} | {item['precision'].upper()}{note} | {s['matched']} of {s['layers']} | "
                     f"{within} | {s['slower_than_2x']} | {s.get('host_bound', 0)} | {ms(s['ios_sum_ms'])} | "
                     f"{ms(s['torch_sum_ms'])} | "
                     f"{worst} |")
    lines.append("")
    return lines


if __name__ == "__main__":
    sys.exit(main())
