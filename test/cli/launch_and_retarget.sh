# Planning for the launch mode that will run (ios-optimize --launch), and
# running a schedule made for another batch or device (ios-run --retarget;
# the IOS paper's Table 3 experiment), docs/cli.md:
#  - --launch plain plans with host launches and records it; the default
#    records "graph"; ios-run warns when it runs a schedule in the other mode;
#  - --launch synced (the IOS paper's engine: the host synchronizes the
#    device after each stage) plans, records and runs the same way, and
#    --dry-run shows the synchronizations;
#  - a schedule for batch 32 is refused at batch 1 without --retarget and
#    runs with it, marked in the report; a schedule for another device
#    profile runs with a warning.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
inception="$IOS_MODELS_DIR/inception_v3-bdyn.onnx"
squeeze="$IOS_MODELS_DIR/squeezenet1_1-bdyn.onnx"
launch_of() { $PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["scheduler"].get("launch", "-"))' "$1"; }
predicted_of() { $PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["predicted_latency_ms"])' "$1"; }
sim_mean() { awk -v f="$1" '$1 == f { print $2 }' "$WORK/stdout"; }

# --- --launch ------------------------------------------------------------------
expect_ok "graph" -- "$OPT" "$squeeze" --batch 1 --cost simulated --device-profile v100 -o "$WORK/graph.json"
expect_ok "plain" -- "$OPT" "$squeeze" --batch 1 --cost simulated --device-profile v100 --launch plain \
  -o "$WORK/plain.json"
[ "$(launch_of "$WORK/graph.json")" = graph ] && ok || fail "the default schedule does not record its launch mode"
[ "$(launch_of "$WORK/plain.json")" = plain ] && ok || fail "--launch plain is not recorded"
grep -q "plain launches" "$WORK/stdout" && ok || fail "the summary does not say the plan is for plain launches"
expect_error "unknown launch mode" 2 'launch' -- "$OPT" "$squeeze" --batch 1 --launch eager -o "$WORK/x.json"
[ ! -e "$WORK/x.json" ] && ok || fail "a refused --launch left a schedule"

# The plain plan's prediction is what ios-run predicts with --no-cuda-graph, without a warning.
expect_ok "run plain as planned" -- "$RUN" "$squeeze" "$WORK/plain.json" --backend sim --no-cuda-graph
grep -q "\[W\]" "$WORK/stdout" && fail "a schedule run as planned is flagged: $(grep '\[W\]' "$WORK/stdout")" || ok
awk -v a="$(sim_mean plain.json)" -v b="$(predicted_of "$WORK/plain.json")" \
  'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-4 * b) }' && ok ||
  fail "ios-run --no-cuda-graph predicts $(sim_mean plain.json) ms, ios-optimize --launch plain $(predicted_of "$WORK/plain.json") ms"
# ... and in the other mode it warns, in the report and on stderr.
expect_ok "run plain with a graph" -- "$RUN" "$squeeze" "$WORK/plain.json" --backend sim
grep -q "\[W\] plain.json was planned for plain launches and runs with a CUDA graph" "$WORK/stdout" && ok ||
  fail "no launch-mode warning in the report: $(head -c 600 "$WORK/stdout")"
grep -q "warning: plain.json was planned for plain launches" "$WORK/stderr" && ok || fail "no launch-mode warning on stderr"
# Old files without the field load and are not flagged.
$PY -c 'import json, sys; d = json.load(open(sys.argv[1])); del d["scheduler"]["launch"]; json.dump(d, open(sys.argv[2], "w"))' \
  "$WORK/plain.json" "$WORK/old.json"
expect_ok "old file" -- "$RUN" "$squeeze" "$WORK/old.json" --backend sim --no-cuda-graph
grep -q "\[W\]" "$WORK/stdout" && fail "a file without a launch mode is flagged" || ok

# --- --launch synced -------------------------------------------------------------
expect_ok "synced" -- "$OPT" "$inception" --batch 1 --cost simulated --device-profile v100 --launch synced \
  -o "$WORK/synced.json"
[ "$(launch_of "$WORK/synced.json")" = synced ] && ok || fail "--launch synced is not recorded"
grep -q "device synchronization after each stage" "$WORK/stdout" && ok ||
  fail "the summary does not say the plan synchronizes the device: $(head -c 600 "$WORK/stdout")"
expect_ok "run synced as planned" -- "$RUN" "$inception" "$WORK/synced.json" --backend sim --launch synced
grep -q "\[W\]" "$WORK/stdout" && fail "a synced schedule run as planned is flagged" || ok
awk -v a="$(sim_mean synced.json)" -v b="$(predicted_of "$WORK/synced.json")" \
  'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-4 * b) }' && ok ||
  fail "ios-run --launch synced predicts $(sim_mean synced.json) ms, ios-optimize $(predicted_of "$WORK/synced.json") ms"
expect_ok "run synced plainly" -- "$RUN" "$inception" "$WORK/synced.json" --backend sim --launch plain
grep -q "\[W\] synced.json was planned for plain launches with a device synchronization after each stage and runs with plain launches (--launch plain); pass --launch synced" "$WORK/stdout" && ok ||
  fail "no launch-mode warning for a synced schedule run plainly: $(head -c 800 "$WORK/stdout")"
# The dry run shows where the host synchronizes (Inception's h100 plan has
# stages of several groups); plain plans have no such step.
expect_ok "h100" -- "$OPT" "$inception" --batch 1 --cost simulated --device-profile h100 -o "$WORK/h100.json"
expect_ok "synced dry run" -- "$RUN" "$inception" "$WORK/h100.json" --launch synced --dry-run
grep -q "host synchronizes the device" "$WORK/stdout" && ok || fail "--dry-run does not show the synchronizations"
expect_ok "plain dry run" -- "$RUN" "$inception" "$WORK/h100.json" --launch plain --dry-run
grep -q "host synchronizes the device" "$WORK/stdout" && fail "a plain plan synchronizes the device" || ok
expect_error "--launch with --no-cuda-graph" 2 'excludes' -- \
  "$RUN" "$inception" "$WORK/synced.json" --backend sim --launch synced --no-cuda-graph
expect_error "--launch on the CPU" 2 'launch' -- "$RUN" "$squeeze" --backend cpu --launch synced

# --- --retarget: Table 3's experiment -------------------------------------------
expect_ok "batch 32" -- "$OPT" "$inception" --batch 32 --cost simulated --device-profile v100 -o "$WORK/b32.json"
expect_ok "batch 1" -- "$OPT" "$inception" --batch 1 --cost simulated --device-profile v100 -o "$WORK/b1.json"
expect_error "another batch without --retarget" 2 'made for batch 32 but the model is run at batch 1.*--retarget' -- \
  "$RUN" "$inception" "$WORK/b1.json" "$WORK/b32.json" --backend sim --batch 1
expect_ok "another batch with --retarget" -- "$RUN" "$inception" "$WORK/b1.json" "$WORK/b32.json" --backend sim \
  --batch 1 --retarget
grep -q "\[W\] b32.json was made for batch 32 and runs at batch 1" "$WORK/stdout" && ok ||
  fail "the retargeted schedule is not marked: $(head -c 800 "$WORK/stdout")"
[ "$(grep -c '\[W\]' "$WORK/stdout")" = 1 ] && ok || fail "the batch-1 schedule is flagged too"
# The specialised schedule is predicted fastest at its own batch (Table 3's finding).
awk -v a="$(sim_mean b1.json)" -v b="$(sim_mean b32.json)" 'BEGIN { exit !(a > 0 && a <= b) }' && ok ||
  fail "at batch 1 the batch-1 schedule ($(sim_mean b1.json) ms) is slower than the batch-32 one ($(sim_mean b32.json) ms)"
# Another device profile runs with a warning.
expect_ok "another device" -- "$RUN" "$inception" "$WORK/b1.json" --backend sim --device-profile h100
grep -q "\[W\] b1.json was made for device 'v100' and runs on 'h100'" "$WORK/stdout" && ok ||
  fail "no device warning: $(head -c 600 "$WORK/stdout")"
finish
