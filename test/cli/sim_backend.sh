# ios-run --backend sim: the predicted comparison table, --export-times and a
# Perfetto trace of Inception V3 in under a second, labelled as predicted;
# options that need computed outputs are refused. ios-optimize --calibrate's
# input errors (its fitting is tested in test/sim/calibration_test.cpp).
source "$(dirname "$0")/common.bash"
model="$IOS_MODELS_DIR/inception_v3-bdyn.onnx"
[ -f "$model" ] || { fail "$model missing: run scripts/setup.sh"; finish; exit; }
for s in sequential ios lios; do
  expect_ok "optimize $s" -- "$OPT" "$model" --batch 1 --cost simulated --device-profile v100 \
    --scheduler "$s" -o "$WORK/$s.json" --quiet
done

# CPU time (user + system), not wall time: the limit must hold on a loaded
# CI machine too.
TIMEFORMAT='%3U %3S'
rc=0
cpu=$( { time "$RUN" "$model" "$WORK/sequential.json" "$WORK/ios.json" "$WORK/lios.json" --backend sim \
         --trace "$WORK/trace.json" --export-times "$WORK/times.json" >"$WORK/sim.stdout" 2>"$WORK/sim.stderr"; } 2>&1 ) || rc=$?
[ "$rc" = 0 ] && ok || fail "sim run: exit code $rc; stderr: $(cat "$WORK/sim.stderr")"
awk -v t="$cpu" 'BEGIN { split(t, p, " "); exit !(p[1] + p[2] < 1.0) }' && ok ||
  fail "ios-run --backend sim took $cpu s (user, system) of CPU on Inception V3 (limit 1 s)"
grep -q "^Predicted on the 'v100' device profile" "$WORK/sim.stdout" && ok ||
  fail "no predicted-on line naming the v100 profile: $(cat "$WORK/sim.stdout")"
grep -qE "^ios.json +[0-9.]+ " "$WORK/sim.stdout" && ok || fail "no table row for ios.json"
grep -q "^Fastest: .*predicted GPU compute time" "$WORK/sim.stdout" && ok || fail "no predicted verdict"

# The trace opens in Perfetto: the Trace Event Format's object form, one
# labelled process per schedule, a named track per stream used, complete
# events named by unit ids, in order and without overlap on a stream; the
# exported times equal the schedules' predictions.
python3 - "$WORK" <<'PY' && ok || fail "trace or times export malformed (see above)"
import json, sys
work = sys.argv[1]
doc = json.load(open(f"{work}/trace.json"))
assert isinstance(doc["traceEvents"], list) and doc["displayTimeUnit"] == "ms"
assert "predicted" in doc["otherData"]["source"], doc["otherData"]
names, tracks, slices = {}, set(), {}
for e in doc["traceEvents"]:
    assert e["ph"] in ("M", "X"), e
    if e["ph"] == "M" and e["name"] == "process_name":
        names[e["pid"]] = e["args"]["name"]
    elif e["ph"] == "M" and e["name"] == "thread_name":
        assert e["args"]["name"] == f"stream {e['tid']}", e
        tracks.add((e["pid"], e["tid"]))
    elif e["ph"] == "X":
        assert e["ts"] >= 0 and e["dur"] >= 0, e
        slices.setdefault((e["pid"], e["tid"]), []).append(e)
assert sorted(names) == [0, 1, 2], names
assert all("predicted" in n and "v100" in n for n in names.values()), names
assert set(slices) <= tracks and len(slices[(1, 1)]) > 0, (tracks, list(slices))
for pid, label in names.items():
    schedule = json.load(open(f"{work}/{label.split(' ')[0]}"))
    units = {u for st in schedule.get("stages", []) for g in st["groups"] for u in g}
    units |= {l["unit"] for l in schedule.get("launches", [])}
    for (p, tid), events in slices.items():
        if p != pid:
            continue
        end = 0.0
        for e in events:
            assert all(part in units for part in e["name"].split("+")), e["name"]
            assert e["ts"] >= end - 1e-6, ("overlap on a stream", e)
            end = e["ts"] + e["dur"]
times = json.load(open(f"{work}/times.json"))
for run in times["runs"]:
    assert run["backend"] == "sim" and run["latency_metric"] == "predicted_gpu_compute", run
    predicted = json.load(open(run["schedule_file"]))["predicted_latency_ms"]
    assert abs(run["summary"]["mean_ms"] - predicted) <= 1e-9 * predicted, (run["name"], predicted)
PY

# Plain launches cost host time: never faster than the CUDA graph.
expect_ok "sim no graph" -- "$RUN" "$model" "$WORK/ios.json" --backend sim --no-cuda-graph \
  --export-times "$WORK/plain.json" --quiet
python3 -c "
import json, sys
plain = json.load(open('$WORK/plain.json'))['runs'][0]['summary']['mean_ms']
graph = json.load(open('$WORK/times.json'))['runs'][1]['summary']['mean_ms']
sys.exit(0 if plain >= graph else 1)" && ok || fail "plain launches predicted faster than a CUDA graph"

expect_error "sim --check" 2 "^ios-run: error: --check needs computed outputs" -- \
  "$RUN" "$model" "$WORK/ios.json" --backend sim --check
expect_error "sim unknown profile" 2 "unknown device profile 'nosuch'" -- \
  "$RUN" "$model" "$WORK/ios.json" --backend sim --device-profile nosuch
expect_error "calibrate without -o" 2 "^ios-optimize: error: --calibrate writes a device profile: give its path with -o" -- \
  "$OPT" "$model" --batch 1 --calibrate "$WORK/none.sqlite"
expect_error "calibrate missing db" 2 "no such profile database" -- \
  "$OPT" "$model" --batch 1 --calibrate "$WORK/none.sqlite" -o "$WORK/p.json"
[ ! -e "$WORK/none.sqlite" ] && [ ! -e "$WORK/p.json" ] && ok || fail "a failed --calibrate left files behind"
expect_error "cpu trace" 2 "--trace has no effect with --backend cpu" -- \
  "$RUN" "$model" "$WORK/ios.json" --backend cpu --trace "$WORK/t2.json"
finish
