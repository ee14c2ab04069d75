# Hostile inputs, second round (onnx_models/make_bad_models.py, the "honest
# messages and memory" section; docs/cli.md, *Limits*): each gets exit 2 and
# one line naming the file and the field or node, within 10 s and, outside
# sanitizer builds, 2 GiB of address space. Never exit 1, never a signal.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
H="$BAD/hostile"
[ -f "$H/resize_huge.onnx" ] || { echo "FAIL: $H/resize_huge.onnx missing: run scripts/make-models.sh"; exit 1; }


# 1. JSON that fits the 64 MiB file limit but not memory once parsed.
$PY - "$WORK" <<'PYEOF'
import sys
work = sys.argv[1]
n = 63 * 1024 * 1024
with open(f"{work}/deep.json", "w") as f:  # [[[[...]]]]: 1.9 GB parsed, before the limits
    f.write("[" * (n // 2) + "]" * (n // 2))
with open(f"{work}/many_arrays.json", "w") as f:  # [[],[],...]: 21 million values
    f.write("[" + "[]," * (n // 3 - 1) + "[]]")
with open(f"{work}/many_keys.json", "w") as f:  # {"0":0,"1":0,...}: shallow, unique keys
    f.write("{" + ",".join(f'"{i:x}":0' for i in range(n // 12)) + "}")
PYEOF
expect_error "63 MB of nested arrays" 2 "deep\.json: the schedule file nests arrays and objects more than 64 levels deep \(at byte 64\)" -- limited "$RUN" "$BAD/tiny_conv.onnx" "$WORK/deep.json" --dry-run
expect_error "63 MB of empty arrays" 2 "many_arrays\.json: the schedule file holds more than 4194304 JSON values \(the limit is reached at byte [0-9]+\)" -- limited "$RUN" "$BAD/tiny_conv.onnx" "$WORK/many_arrays.json" --dry-run
expect_error "a 63 MB object" 2 "many_keys\.json: the schedule file holds more than 4194304 JSON values" -- limited "$RUN" "$BAD/tiny_conv.onnx" "$WORK/many_keys.json" --dry-run
rm -f "$WORK/deep.json" "$WORK/many_arrays.json" "$WORK/many_keys.json"

# 2. Schedule fields echoed briefly and as found.
expect_ok "a schedule of tiny_conv" -- "$OPT" "$BAD/tiny_conv.onnx" --cost simulated -o "$WORK/tiny.json"
edit_schedule() {  # edit_schedule OUT PYTHON-STATEMENT (on the document `d`)
  $PY - "$WORK/tiny.json" "$1" "$2" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(d))
PYEOF
}
edit_schedule "$WORK/long_id.json" 'd["stages"][0]["groups"][0][0] = "u" * 50_000_000'
expect_error "a 50 MB unit id" 2 "long_id\.json: field 'stages\[0\]\.groups\[0\]\[0\]' names unit 'u{80}'\.\.\. \(50000000 bytes\), which this model does not have" -- limited "$RUN" "$BAD/tiny_conv.onnx" "$WORK/long_id.json" --dry-run
if [ "$(wc -c <"$WORK/stderr")" -lt 600 ]; then ok; else fail "the 50 MB unit id message has $(wc -c <"$WORK/stderr") bytes"; fi
rm -f "$WORK/long_id.json"
edit_schedule "$WORK/nul_id.json" 'd["stages"][0]["groups"][0][0] = "conv\0tail\nline"'
expect_error "a NUL and a newline in a unit id" 2 "nul_id\.json: .*names unit 'conv\\\\x00tail\\\\nline', which this model does not have" -- limited "$RUN" "$BAD/tiny_conv.onnx" "$WORK/nul_id.json" --dry-run
echo '{"format": "ios-schedule", "version": 18446744073709551615}' >"$WORK/version_max.json"
expect_error "version 2^64 - 1" 2 "version_max\.json: schedule format version 18446744073709551615 is not supported" -- limited "$RUN" "$BAD/tiny_conv.onnx" "$WORK/version_max.json" --dry-run
echo '{"format": "ios-schedule", "version": "1"}' >"$WORK/version_string.json"
expect_error "a string version" 2 "version_string\.json: field 'version' must be an integer, got a string" -- limited "$RUN" "$BAD/tiny_conv.onnx" "$WORK/version_string.json" --dry-run
edit_schedule "$WORK/units_max.json" 'd["model"]["units"] = 2**64 - 1'
expect_error "a unit count of 2^64 - 1" 2 "units_max\.json: field 'model\.units' must be an integer below 2\^63, got 18446744073709551615" -- limited "$RUN" "$BAD/tiny_conv.onnx" "$WORK/units_max.json" --dry-run

# 3. Sizes that are negative or not finite: the node, the operand and the value.
hostile() {  # hostile NAME PATTERN: ios-optimize must refuse the model
  local name=$1 pattern=$2
  expect_error "$name" 2 "$name\.onnx: $pattern" -- limited "$OPT" "$H/$name.onnx" --cost simulated -o "$WORK/$name.json"
}
hostile resize_negative_scales "node 'resize' \(Resize\): input 2 \('scales'\) holds -2 at position 2; scales must be positive finite numbers"
hostile resize_nan_scales "node 'resize' \(Resize\): input 2 \('scales'\) holds nan at position 2"
hostile resize_inf_scales "node 'resize' \(Resize\): input 2 \('scales'\) holds inf at position 2"
hostile resize_negative_sizes "node 'resize' \(Resize\): input 3 \('sizes'\) holds -16 at position 2"
hostile split_negative "node 'split' \(Split\): input 1 \('split'\) holds -1 at position 0"
hostile pad_negative_beyond "node 'pad' \(Pad\): input 1 \('pads'\) pads axis 2 \(size 8\) by -10 and 0, which leaves -2 elements"
hostile transpose_short_perm "node 'transpose' \(Transpose\): attribute 'perm' has 3 entries for an input of rank 4"
hostile weight_type_17 "initializer 'w' has element type 17 \(float8 e4m3fn\), which ios does not read"
# The refusal is the one above, not a message about sizes over 2^34 (a run
# that printed nothing, or crashed, is a failure too, not a pass).
for name in resize_negative_scales resize_nan_scales split_negative pad_negative_beyond; do
  rc=0; limited "$OPT" "$H/$name.onnx" --cost simulated -o "$WORK/x.json" >"$WORK/out" 2>&1 || rc=$?
  if [ "$rc" != 2 ]; then
    fail "$name: exit code $rc, expected 2: $(head -c 400 "$WORK/out")"
  elif ! grep -q "$name\.onnx: node '[a-z]*' (" "$WORK/out"; then
    fail "$name: no error naming the node: $(head -c 400 "$WORK/out")"
  elif grep -q "2\^34" "$WORK/out"; then
    fail "$name still reported as a size over 2^34 elements"
  else ok; fi
done

# 4. A --reference of another shape than its output is an input error.
$PY -c "import numpy as np, sys; np.save(sys.argv[1], np.zeros((1, 4, 8, 7), np.float32))" "$WORK/ref.npy"
expect_error "a --reference of the wrong shape" 2 "ref\.npy: --reference for output 'output' has shape 1x4x8x7, the output has shape 1x4x8x8" -- limited "$RUN" "$BAD/tiny_conv.onnx" --backend cpu --reference "$WORK/ref.npy" --iterations 1 --warmup 0

# 5. Memory: tensors within the element limit that do not fit are refused
# before they are allocated; a std::bad_alloc that still happens is exit 2.
if [ "$asan" = false ]; then
  expect_error "a 12000x12000 Resize on the CPU under 2 GiB" 2 "not enough memory: the CPU backend needs [0-9]+ MiB more \(activations 1648 MiB, outputs 1648 MiB.*ulimit -v\) of 2048 MiB" -- limited "$RUN" "$H/resize_huge.onnx" --backend cpu --iterations 1 --warmup 0
  expect_ok "the same model scheduled" -- limited "$OPT" "$H/resize_huge.onnx" --cost simulated -o "$WORK/huge.json"
  big_model="$IOS_MODELS_DIR/mobilenet_v2-bdyn.onnx"
  if [ -f "$big_model" ]; then
    expect_error "--batch 1024 on MobileNet V2 under 2 GiB" 2 "not enough memory: the CPU backend needs [0-9]+ MiB more \(activations [0-9]+ MiB" -- limited "$RUN" "$big_model" --batch 1024 --backend cpu --iterations 1 --warmup 0
  fi
  # An allocation no size check foresees: the 300,000-node chain under 400 MiB.
  $PY "$IOS_SOURCE_DIR/onnx_models/make_large_models.py" "$WORK" eltwise:300000 >/dev/null
  expect_error "bad_alloc in ios-optimize" 2 "not enough memory" -- bash -c "ulimit -v $((400 * 1024)); exec timeout -s KILL 30 \"\$0\" \"\$@\"" "$OPT" "$WORK/eltwise_chain_300000.onnx" --cost simulated -o "$WORK/chain.json"
fi
finish
