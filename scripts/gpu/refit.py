#!/usr/bin/env python3
"""Refits the simulator's device profile from a GPU kit run, and validates it.

    scripts/gpu/refit.py KIT --device h200 [--out h200-refit.json]
                         [--db EARLIER/profile.sqlite ...] [--no-gate]

KIT is what scripts/gpu/first-run.sh brought back (profile.sqlite,
timings.json, results.tgz, env.txt; or a folder holding the unpacked
results/times/). The command

 1. fits the knobs of the shipped DEVICE profile to the stages of the --fit
    networks (default: squeezenet1_1 inception_v3) that the kit's measured
    searches stored in KIT/profile.sqlite and in any --db: one
    `ios-optimize --calibrate` over every model and database
    (docs/cost-model.md, "Calibration");
 2. re-predicts every schedule the kit timed with `ios-run --launch graph`
    (its per-network timing exports, results/times/NET-graph.json) with the
    refit profile and with the start profile (`ios-run --backend sim`); the
    schedules are the kit's prepared ones, made again here exactly as
    scripts/gpu/prepare.sh makes them and checked against the prediction the
    kit recorded for each (timings.json), unless --schedules gives them;
 3. prints a table and the errors |predicted / measured - 1| (median and max)
    over the graph-mode schedules of the fit networks ("fit") and of the
    --validate networks (default: randwire nasnet_a_large; "validation":
    their stages take no part in the fit), and writes the profile, named
    DEVICE-refit, to --out.

Exit codes: 0 ok; 1 the validation median error is over --gate (default
20%; --no-gate only reports); 2 a usage or input error (no kit, no profile
database, no fit model with measured stages). What the kit lacks (a network
not timed, a model without measured stages, a model file not found here) is
said in the output and left out; the figures are over what exists. Standard
library only.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Each label the kit times and the scheduler and parameters that make it
# (scripts/gpu/prepare.sh, bench/harness/run_benchmarks.py).
SCHEDULERS = {
    "sequential": ("sequential", ""), "greedy": ("greedy", ""), "ios": ("ios", ""),
    "ios-parallel": ("ios", "strategy=parallel"), "ios-merge": ("ios", "strategy=merge"),
    "dos": ("dos", ""), "lios": ("lios", ""), "nimble": ("nimble", ""),
}


# The kit's timing exports (scripts/gpu/collect.py): NAME-LAUNCH.json,
# NAME-VARIANT-LAUNCH.json (another precision or batch), NAME-repeatN-LAUNCH.json.
EXPORT = re.compile(r"^(?P<net>.+?)(?:-(?P<variant>(?:b\d+-)?(?:tf32|fp32|fp16|bf16)|b\d+|repeat\d+))?"
                    r"-(?P<launch>graph|plain)\.json$")


class InputError(Exception):
    pass


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: {e}")


def run(cmd):
    p = subprocess.run(cmd, text=True, capture_output=True)
    if p.returncode != 0:
        raise InputError(f"{' '.join(cmd)} exited {p.returncode}: {(p.stderr or p.stdout).strip()[-800:]}")
    return p.stdout


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pct(x):
    return "—" if x is None else f"{100.0 * x:.1f}%"


def error_stats(errors):
    if not errors:
        return None, None
    a = [abs(e) for e in errors]
    return statistics.median(a), max(a)


def unpack_times(kit, work):
    """The folder holding NET-graph.json timing exports (and the kit's
    schedules folder, where a kit packs them), unpacked from KIT/results.tgz
    into WORK when KIT is not already unpacked."""
    for d in (os.path.join(kit, "results"), kit):
        if os.path.isdir(os.path.join(d, "times")):
            return d
    archive = os.path.join(kit, "results.tgz")
    if not os.path.isfile(archive):
        raise InputError(f"{kit}: neither results.tgz nor results/times/ (is it a GPU kit's folder?)")
    with tarfile.open(archive) as tar:
        wanted = []
        for m in tar.getmembers():
            name = m.name[2:] if m.name.startswith("./") else m.name
            parts = name.split("/")
            # Only plain files of times/ and schedules/, never outside WORK.
            if not m.isfile() or ".." in parts or name.startswith("/") or len(parts) < 3:
                continue
            m.name = name
            if parts[0] == "results" and parts[1] in ("times", "schedules", "prepared") and m.name.endswith(".json"):
                wanted.append(m)
        tar.extractall(work, members=wanted)
    if not os.path.isdir(os.path.join(work, "results", "times")):
        raise InputError(f"{archive}: holds no results/times/ timing exports")
    return os.path.join(work, "results")


def kit_device(kit, timings):
    """The GPU's name as the kit recorded it ('NVIDIA H200'), or None."""
    try:
        with open(os.path.join(kit, "env.txt")) as f:
            for line in f:
                if line.startswith("gpu:"):
                    return line.split(":", 1)[1].split(",")[0].strip()
    except OSError:
        pass
    if timings and timings.get("device"):
        return timings["device"].split(",")[0].strip()
    return None


def find_model(net, dirs):
    for d in dirs:
        p = os.path.join(d, net + ".onnx")
        if os.path.isfile(p):
            return p
    return None


def matches(net, names):
    return any(net == n or net.startswith(n + "-") for n in names)


def calibrate(args, fit_models, dbs, precision, out_path):
    """ios-optimize --calibrate over every fit model and database; the
    output's per-model stage counts and its error line."""
    first, rest = fit_models[0], fit_models[1:]
    cmd = [os.path.join(args.bin, "ios-optimize"), first[1], "--batch", "1", "--precision", precision,
           "--calibrate", dbs[0], "--device-profile", args.device, "-o", out_path]
    for db in dbs[1:]:
        cmd += ["--calibrate-db", db]
    for _, model in rest:
        cmd += ["--calibrate-model", model]
    text = run(cmd)
    stages = {}
    for net, model in fit_models:
        m = re.search(r"^Measured\s+(\d+) stages of " + re.escape(model) + r" ", text, re.M)
        stages[net] = int(m.group(1)) if m else 0
    error = re.search(r"^Error\s+mean \|predicted/measured - 1\| (\S+)% -> (\S+)% \(max (\S+)%\)", text, re.M)
    knobs = re.findall(r"^  (\w+)\s+(\S+) -> (\S+)$", text, re.M)
    return text, stages, error.groups() if error else None, knobs


def schedule_for(args, net, label, profile, model, kit_results, work, notes):
    """The schedule file the kit timed as LABEL, and whether it was made for
    another model file (the kit's rebuilt one: same graph, other weights)."""
    # The kit's own prepared files (results/prepared/, brought back since the
    # second-generation kit), else those a kit put under results/schedules/.
    for d in filter(None, [args.schedules, os.path.join(kit_results, "prepared", "schedules"),
                           os.path.join(kit_results, "schedules")]):
        for p in (os.path.join(d, profile, net, label + ".json"), os.path.join(d, net, label + ".json")):
            if os.path.isfile(p):
                s = load_json(p)
                return p, s, s.get("model", {}).get("sha256") != sha256(model)
    if label not in SCHEDULERS:
        notes.append(f"{net}: no schedule file for '{label}' and no way to make one here: left out")
        return None, None, False
    scheduler, params = SCHEDULERS[label]
    out = os.path.join(work, "schedules", profile, net, label + ".json")
    if not os.path.isfile(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        cmd = [os.path.join(args.bin, "ios-optimize"), model, "--batch", "1", "--cost", "simulated",
               "--device-profile", profile, "--scheduler", scheduler, "-o", out, "--quiet"]
        if params:
            cmd += ["--params", params]
        if scheduler in ("ios", "dos"):
            cmd += ["--time-limit", "60"]
        run(cmd)
    return out, load_json(out), False


def predict(args, model, runs, profile_path, precision, work, tag, force):
    """{label: predicted ms} of the schedules [(label, path)] on a profile."""
    export = os.path.join(work, f"predicted-{tag}.json")
    cmd = [os.path.join(args.bin, "ios-run"), model] + [f"{label}={path}" for label, path in runs]
    cmd += ["--backend", "sim", "--device-profile", profile_path, "--launch", "graph", "--batch", "1",
            "--precision", precision, "--export-times", export, "--quiet"]
    if force:
        cmd.append("--force")
    run(cmd)
    return {r["name"]: r["summary"]["median_ms"] for r in load_json(export)["runs"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("kit", help="the kit's files (profile.sqlite, timings.json, results.tgz)")
    ap.add_argument("--device", help="the shipped profile of the GPU that ran, the fit's start "
                    "(default: from the kit's env.txt, e.g. h200)")
    ap.add_argument("--out", help="the refit profile to write (default: DEVICE-refit.json)")
    ap.add_argument("--db", action="append", default=[],
                    help="another profile database (e.g. an earlier kit run's); repeatable")
    ap.add_argument("--fit", action="append", help="a network whose stages are fitted; repeatable "
                    "(default: squeezenet1_1 inception_v3)")
    ap.add_argument("--validate", action="append", help="a network whose schedules validate the fit; "
                    "repeatable (default: randwire nasnet_a_large)")
    ap.add_argument("--models", action="append", help="a folder of the models as NET.onnx; repeatable "
                    "(default: onnx_models/generated, build/gpu-kit/export, build/gpu-kit/canonical/bench)")
    ap.add_argument("--schedules", help="the kit's prepared schedules as DIR/PROFILE/NET/LABEL.json "
                    "(default: the kit's own if it packed them, else made here as prepare.sh makes them)")
    ap.add_argument("--work", help="keep the unpacked files and made schedules here (default: a "
                    "temporary folder, removed)")
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "apps"),
                    help="where ios-optimize and ios-run are (default: build/apps)")
    ap.add_argument("--gate", type=float, default=0.20,
                    help="the largest validation median error accepted (default 0.20)")
    ap.add_argument("--no-gate", action="store_true", help="report only; exit 0 whatever the errors")
    args = ap.parse_args()
    fit_names = args.fit or ["squeezenet1_1", "inception_v3"]
    validate_names = args.validate or ["randwire", "nasnet_a_large"]
    both = [n for n in fit_names if n in validate_names]
    if both:
        ap.error(f"{', '.join(both)} both fitted and validating: a network validates only what it did not fit")
    model_dirs = args.models or [os.path.join(REPO, "onnx_models", "generated"),
                                 os.path.join(REPO, "build", "gpu-kit", "export"),
                                 os.path.join(REPO, "build", "gpu-kit", "canonical", "bench")]
    for tool in ("ios-optimize", "ios-run"):
        if not os.access(os.path.join(args.bin, tool), os.X_OK):
            ap.error(f"{os.path.join(args.bin, tool)} is missing: build it (scripts/build.sh) or give --bin")
    if not os.path.isdir(args.kit):
        ap.error(f"{args.kit}: no such folder")

    work = args.work or tempfile.mkdtemp(prefix="ios-refit-")
    os.makedirs(work, exist_ok=True)
    try:
        return refit(args, fit_names, validate_names, model_dirs, work)
    except InputError as e:
        print(f"refit: error: {e}", file=sys.stderr)
        return 2
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def refit(args, fit_names, validate_names, model_dirs, work):
    kit = args.kit
    notes = []
    timings = load_json(os.path.join(kit, "timings.json")) if os.path.isfile(os.path.join(kit, "timings.json")) else None
    device_name = kit_device(kit, timings)
    if args.device is None:
        m = re.search(r"\b([A-Z]\d{2,3})\b", device_name or "")
        if not m:
            raise InputError(f"{kit}: no GPU named in env.txt or timings.json; give --device")
        args.device = m.group(1).lower()
    elif device_name and args.device.lower() not in device_name.lower().replace(" ", ""):
        raise InputError(f"the kit ran on {device_name}, not on a GPU of the '{args.device}' profile")
    out = args.out or f"{args.device}-refit.json"
    if os.path.exists(out):
        try:
            with open(out) as f:
                if "sm_count" not in json.load(f):
                    raise ValueError
        except (OSError, ValueError):
            raise InputError(f"--out {out}: the file exists and is not a device profile")
    results = unpack_times(kit, work)
    dbs = ([os.path.join(kit, "profile.sqlite")] if os.path.isfile(os.path.join(kit, "profile.sqlite")) else []) + args.db
    if not dbs:
        raise InputError(f"{kit}: no profile.sqlite (the measured searches' stages) and no --db")
    for db in args.db:
        if not os.path.isfile(db):
            raise InputError(f"--db {db}: no such file")

    # The timed networks and their graph-mode schedules.
    exports = {}
    for f in sorted(os.listdir(os.path.join(results, "times"))):
        m = EXPORT.match(f)
        # The TF32 batch-1 exports, as the measured stages: not another
        # precision's or batch's (NAME-VARIANT-graph.json), nor the repeated
        # calls (NAME-repeatN-graph.json).
        if m and m["launch"] == "graph" and not m["variant"]:
            exports[m["net"]] = load_json(os.path.join(results, "times", f))
    nets = {}
    for group, names in (("fit", fit_names), ("validation", validate_names)):
        for name in names:
            found = [n for n in exports if matches(n, [name])]
            if not found:
                notes.append(f"{name}: no graph-mode timings in this kit run (no {name}*-graph.json): "
                             f"no {group} schedules of it")
            for n in found:
                nets[n] = group
    precisions = {r.get("precision", "tf32") for n in nets for r in exports[n].get("runs", [])}
    if len(precisions) > 1:
        raise InputError(f"the timed schedules mix precisions ({', '.join(sorted(precisions))})")
    precision = precisions.pop() if precisions else "tf32"

    # 1. The fit.
    fit_models = []
    for name in fit_names:
        net = next((n for n in exports if matches(n, [name])), name + "-bdyn")
        model = find_model(net, model_dirs)
        if model is None:
            notes.append(f"{net}: no {net}.onnx in {', '.join(model_dirs)}: its stages are not fitted")
        else:
            fit_models.append((net, model))
    if not fit_models:
        raise InputError("no model of the --fit networks was found (give --models DIR)")
    fitted_path = os.path.join(work, "fitted.json")
    text, stages, stage_error, knobs = calibrate(args, fit_models, dbs, precision, fitted_path)
    for net, n in stages.items():
        if n == 0:
            notes.append(f"{net}: none of its stages is in {', '.join(dbs)}: not fitted (pass --db with "
                         f"the profile.sqlite of the kit run that measured it)")
    for net in list(nets):
        if nets[net] == "fit" and not stages.get(net):
            nets[net] = "held out"  # timed, but its stages took no part

    # 2. Every graph-mode schedule, predicted on both profiles.
    rows = []
    for net, group in sorted(nets.items(), key=lambda kv: (["fit", "held out", "validation"].index(kv[1]), kv[0])):
        model = find_model(net, model_dirs)
        if model is None:
            notes.append(f"{net}: no {net}.onnx in {', '.join(model_dirs)}: its schedules are not predicted")
            continue
        predicted_kit = ((timings or {}).get("networks", {}).get(net, {}).get("schedules", {}))
        runs, force, measured = [], False, {}
        for r in exports[net].get("runs", []):
            label, med = r["name"], (r.get("summary") or {}).get("median_ms")
            if r.get("backend") != "cuda" or not med:
                notes.append(f"{net} {label}: not a measured CUDA timing: left out")
                continue
            if r.get("batch", 1) != 1:
                notes.append(f"{net} {label}: timed at batch {r.get('batch')}, the fit is at batch 1: left out")
                continue
            profile = r.get("schedule_file", "").split("/")[-3] if r.get("schedule_file", "").count("/") >= 2 else args.device
            path, sched, other_model = schedule_for(args, net, label, profile, model, results, work, notes)
            if path is None:
                continue
            kit_ms = predicted_kit.get(label, {}).get(f"predicted_ms_{profile}")
            if kit_ms and abs(sched["predicted_latency_ms"] / kit_ms - 1.0) > 1e-6:
                notes.append(f"{net} {label}: the schedule found here predicts {sched['predicted_latency_ms']:.4f} ms "
                             f"on {profile}, the kit's {kit_ms:.4f} ms: not the schedule timed, left out")
                continue
            runs.append((label, path))
            measured[label] = med
            force = force or other_model
        if not runs:
            continue
        before = predict(args, model, runs, args.device, precision, work, net + "-start", force)
        after = predict(args, model, runs, fitted_path, precision, work, net + "-refit", force)
        for label, _ in runs:
            rows.append({"net": net, "group": group, "label": label, "measured": measured[label],
                         "before": before[label], "after": after[label], "path": dict(runs)[label],
                         "force": force})

    # 3. The report.
    print(f"=== refit of the '{args.device}' profile from the GPU kit run in {kit} ({device_name or 'GPU unknown'}) ===")
    print(f"Fitted to        {', '.join(f'{n} ({stages.get(n, 0)} stages)' for n, _ in fit_models)} "
          f"from {', '.join(dbs)}")
    for name, old, new in knobs:
        print(f"  {name:<26} {old:>10} -> {new}")
    if stage_error:
        print(f"Stage error      mean |predicted/measured - 1| {stage_error[0]}% -> {stage_error[1]}% "
              f"(max {stage_error[2]}%)")
    print()
    print(f"{'network':<22} {'schedule':<13} {'group':<10} {'measured':>9} {args.device + ' ms':>9} "
          f"{'refit ms':>9} {'err ' + args.device:>9} {'err refit':>9}")
    for r in rows:
        r["err_before"] = r["before"] / r["measured"] - 1.0
        r["err_after"] = r["after"] / r["measured"] - 1.0
        print(f"{r['net']:<22} {r['label']:<13} {r['group']:<10} {r['measured']:>9.4f} {r['before']:>9.4f} "
              f"{r['after']:>9.4f} {100 * r['err_before']:>+8.1f}% {100 * r['err_after']:>+8.1f}%")
    print()
    summary = {}
    for group in ("fit", "held out", "validation"):
        sel = [r for r in rows if r["group"] == group]
        if not sel and group == "held out":
            continue
        b_med, b_max = error_stats([r["err_before"] for r in sel])
        a_med, a_max = error_stats([r["err_after"] for r in sel])
        summary[group] = (a_med, a_max, len(sel))
        what = ", ".join(sorted({r["net"] for r in sel})) or "none"
        print(f"{group.capitalize() + ' error':<16} median {pct(a_med)}, max {pct(a_max)} over {len(sel)} "
              f"graph-mode schedules of {what} (the {args.device} profile: median {pct(b_med)}, max {pct(b_max)})")

    # The profile, named for what it is, its description saying how it did.
    profile = load_json(fitted_path)
    profile["name"] = f"{args.device}-refit"
    v_med, v_max, v_n = summary["validation"]
    v_nets = ", ".join(sorted({r["net"] for r in rows if r["group"] == "validation"})) or "none"
    extra = (f"; refit by scripts/gpu/refit.py, |predicted/measured - 1| of graph-mode schedules: fit median "
             f"{pct(summary['fit'][0])}, validation median {pct(v_med)} and max {pct(v_max)} over {v_n} "
             f"of {v_nets}")
    if len(profile.get("description", "")) + len(extra) <= 1024:
        profile["description"] = profile.get("description", "") + extra
    final = os.path.join(work, "refit.json")
    with open(final, "w") as f:
        json.dump(profile, f, indent=2)
        f.write("\n")
    # The file written must load and predict as the fit did: one schedule
    # again, of the smallest model, with the file itself.
    if rows:
        r = min(rows, key=lambda r: os.path.getsize(find_model(r["net"], model_dirs)))
        again = predict(args, find_model(r["net"], model_dirs), [(r["label"], r["path"])], final, precision,
                        work, "check", r["force"])[r["label"]]
        if abs(again / r["after"] - 1.0) > 1e-9:
            raise InputError(f"{final}: predicts {again} ms for {r['net']} {r['label']}, the fit {r['after']} ms")
    shutil.copyfile(final, out + ".partial")
    os.replace(out + ".partial", out)
    print(f"Written          {out} (use it with --device-profile {out})")
    if notes:
        print("\nWhat this kit run lacks:")
        for n in notes:
            print(f"  - {n}")
    if v_med is None:
        print("Gate             not applied: no validation schedules (nothing to judge the fit by)")
        return 0
    verdict = v_med <= args.gate
    print(f"Gate             validation median {pct(v_med)} {'<=' if verdict else '>'} {pct(args.gate)}: "
          f"{'passed' if verdict else 'FAILED'}{' (reported only: --no-gate)' if args.no_gate and not verdict else ''}")
    return 0 if verdict or args.no_gate else 1


if __name__ == "__main__":
    sys.exit(main())
