# Every bad input gets its one-line error and documented exit code, no crash.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
model="$BAD/tiny_conv.onnx"
[ -f "$model" ] || { echo "FAIL: $model missing: run scripts/setup.sh"; exit 1; }

expect_error "missing model" 2 "nope\.onnx.*(cannot|does not exist|no such)" -- "$OPT" "$WORK/nope.onnx"
expect_error "not ONNX" 2 "not_onnx\.onnx.*not a valid ONNX model" -- "$OPT" "$BAD/not_onnx.onnx"
expect_error "truncated" 2 "truncated\.onnx.*not a valid ONNX model" -- "$OPT" "$BAD/truncated.onnx"
expect_error "cycle" 2 "cycle\.onnx.*cycle" -- "$OPT" "$BAD/cycle.onnx"
expect_error "unsupported op" 2 "weird_node.*LpNormalization.*Conv" -- "$OPT" "$BAD/unsupported_op.onnx"
expect_error "symbolic batch" 2 "symbolic_batch\.onnx.*--batch" -- "$OPT" "$BAD/symbolic_batch.onnx"
expect_ok "symbolic batch with --batch" -- "$OPT" "$BAD/symbolic_batch.onnx" --batch 2 -o "$WORK/sym.json"
# The schedule written is for batch 2 and is accepted by ios-run as it is.
is_batch2_schedule() {
  $PY - "$1" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "ios-schedule", d.get("format")
assert d["model"]["batch"] == 2, d["model"]
assert d["model"]["inputs"] and all(i["shape"][0] == 2 for i in d["model"]["inputs"]), d["model"]["inputs"]
units = [u for stage in d["stages"] for group in stage["groups"] for u in group]
assert len(units) == len(set(units)) == d["model"]["units"] > 0, (units, d["model"]["units"])
PYEOF
}
is_batch2_schedule "$WORK/sym.json" && ok || fail "symbolic batch with --batch: not a batch-2 schedule: $(head -c 300 "$WORK/sym.json")"
expect_ok "the batch-2 schedule runs on the CPU" -- "$RUN" "$BAD/symbolic_batch.onnx" "$WORK/sym.json" --backend cpu --iterations 1 --warmup 0
expect_error "unknown scheduler" 2 "unknown scheduler 'foo'.*ios" -- "$OPT" "$model" --scheduler foo
expect_error "unknown parameter" 2 "ios.*'bogus'" -- "$OPT" "$model" --scheduler ios --params bogus=1
expect_error "bad option" 2 "ios-optimize: " -- "$OPT" "$model" --cost sometimes
expect_error "unknown device profile" 2 "no_such_gpu.*h100" -- "$OPT" "$model" --cost simulated --device-profile no_such_gpu

# Schedules: one good one, then broken copies.
expect_ok "optimize tiny model" -- "$OPT" "$BAD/two_branch.onnx" -o "$WORK/good.json" --scheduler greedy
expect_ok "dry-run good schedule" -- "$RUN" "$BAD/two_branch.onnx" "$WORK/good.json" --dry-run

edit() {  # edit IN OUT PYTHON-EXPRESSION-ON-d
  $PY - "$1" "$2" "$3" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PYEOF
}
edit "$WORK/good.json" "$WORK/drop.json" 'd["stages"][-1]["groups"].pop() if len(d["stages"][-1]["groups"]) > 1 else d["stages"].pop()'
expect_error "dropped unit" 2 "drop\.json.*is missing" -- "$RUN" "$BAD/two_branch.onnx" "$WORK/drop.json" --dry-run
edit "$WORK/good.json" "$WORK/dup.json" 'd["stages"][-1]["groups"][0].append(d["stages"][0]["groups"][0][0])'
expect_error "duplicated unit" 2 "dup\.json.*scheduled twice" -- "$RUN" "$BAD/two_branch.onnx" "$WORK/dup.json" --dry-run
edit "$WORK/good.json" "$WORK/order.json" 'd["stages"].reverse()'
expect_error "broken dependency" 2 "order\.json.*before or beside its input" -- "$RUN" "$BAD/two_branch.onnx" "$WORK/order.json" --dry-run
head -c "$(( $(wc -c <"$WORK/good.json") / 2 ))" "$WORK/good.json" >"$WORK/half.json"
expect_error "schedule cut in half" 2 "half\.json.*not valid JSON" -- "$RUN" "$BAD/two_branch.onnx" "$WORK/half.json" --dry-run
expect_error "schedule for another model" 2 "good\.json.*(another model|units but the model has)" -- "$RUN" "$BAD/inception_like.onnx" "$WORK/good.json" --dry-run
edit "$WORK/good.json" "$WORK/otherhash.json" 'd["model"]["sha256"] = "0" * 64'
expect_error "hash mismatch" 2 "otherhash\.json.*another model.*--force" -- "$RUN" "$BAD/two_branch.onnx" "$WORK/otherhash.json" --dry-run
expect_ok "hash mismatch forced" -- "$RUN" "$BAD/two_branch.onnx" "$WORK/otherhash.json" --dry-run --force
# What the forced run accepted: the plan launches each unit of the schedule
# once, and the one schedule is reported valid for this model.
launched_units_match() {  # SCHEDULE DRY_RUN_OUTPUT
  $PY - "$1" "$2" <<'PYEOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
units = sorted(u for stage in d["stages"] for group in stage["groups"] for u in group)
out = open(sys.argv[2]).read()
launched = sorted(re.findall(r"launch (\S+) \[", out))
assert launched == units, (launched, units)
assert re.search(r"^1 schedule\(s\) valid for .*two_branch\.onnx \(batch 1\)", out, re.M), out
PYEOF
}
launched_units_match "$WORK/otherhash.json" "$WORK/stdout" && ok || fail "hash mismatch forced: the dry run does not show the schedule's units: $(head -c 400 "$WORK/stdout")"
expect_error "missing schedule" 2 "none\.json.*cannot open" -- "$RUN" "$BAD/two_branch.onnx" "$WORK/none.json" --dry-run

# No GPU here (or a build without CUDA): the documented exit code 3.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  expect_error "no GPU" 3 "no CUDA device.*--dry-run.*--backend cpu" -- "$RUN" "$BAD/two_branch.onnx" "$WORK/good.json"
  expect_error "measured cost without GPU" 3 "measured.*CUDA device" -- "$OPT" "$model" --cost measured
fi
finish
