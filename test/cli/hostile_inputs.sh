# Hostile inputs (onnx_models/make_bad_models.py, hostile/): each gets exit 2
# and one line (exit 0 where the input is legitimate) within 10 s and, outside
# sanitizer builds, 2 GiB of address space. No crash, hang or unbounded read.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
H="$BAD/hostile"
[ -d "$H" ] || { echo "FAIL: $H missing: run scripts/make-models.sh"; exit 1; }


hostile() {  # hostile NAME PATTERN [extra options]: ios-optimize must refuse the model
  local name=$1 pattern=$2; shift 2
  expect_error "$name" 2 "$name\.onnx.*$pattern" -- limited "$OPT" "$H/$name.onnx" --batch 1 --cost simulated -o "$WORK/$name.json" "$@"
}
# 1. Inputs that crashed ONNX's shape inference.
expect_ok "slice with step -1 over an empty constant" -- limited "$OPT" "$H/slice_negative_step_empty.onnx" --cost simulated -o "$WORK/slice.json"
hostile pads_short_data "'pads'.*bytes of data"
# 2. Sizes whose arithmetic wraps.
hostile matmul_huge_weight "'w'.*2\^34"
hostile empty_huge_dims "empty.*too large"
# 3. Folding without a size cap.
hostile where_huge_fold "where.*too large"
hostile gather_huge_fold "gather.*too large"
# 4. Undefined behaviour in folding.
hostile neg_int64_min "neg.*int64"
hostile cast_inf "(more elements than int64 can count|more than 2\^34)"
hostile transpose_repeated_axis "transpose.*(twice|perm)"
# 8. External data: only files inside the model's folder; nothing else is touched.
hostile external_absolute "/etc/passwd.*absolute path"
hostile external_dotdot "\.\./\.\./\.\./\.\./etc/passwd.*leaves the model's folder"
expect_ok "external data beside the model" -- limited "$OPT" "$H/external_beside.onnx" --cost simulated -o "$WORK/beside.json"
expect_ok "external data beside the model runs" -- "$RUN" "$H/external_beside.onnx" "$WORK/beside.json" --backend cpu --iterations 1 --warmup 0
# The answer must not depend on whether the named file exists.
relocate() {  # relocate IN OUT LOCATION
  $PY - "$1" "$2" "$3" <<'PYEOF'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
for e in m.graph.initializer[0].external_data:
    if e.key == "location":
        e.value = sys.argv[3]
open(sys.argv[2], "wb").write(m.SerializeToString())
PYEOF
}
for location in /etc/passwd /nonexistent/passwd ../etc/passwd ../nonexistent/passwd; do
  relocate "$H/external_absolute.onnx" "$WORK/probe.onnx" "$location"
  "$OPT" "$WORK/probe.onnx" --cost simulated -o "$WORK/probe.json" 2>&1 | sed "s|$location|LOCATION|" >>"$WORK/probe_messages"
done
if [ "$(sort -u "$WORK/probe_messages" | wc -l)" = 2 ]; then ok; else fail "external data messages depend on the file: $(sort -u "$WORK/probe_messages")"; fi
# A symbolic link inside the folder that leads out of it.
mkdir -p "$WORK/linked"
cp "$H/external_beside.onnx" "$WORK/linked/"
ln -s /etc/passwd "$WORK/linked/external_beside.weights"
expect_error "external data through a symbolic link" 2 "external_beside\.weights.*leads out of the model's folder" -- limited "$OPT" "$WORK/linked/external_beside.onnx" --cost simulated -o "$WORK/linked.json"

# 6. Unbounded reads.
expect_ok "tiny model" -- "$OPT" "$BAD/tiny_conv.onnx" --cost simulated -o "$WORK/tiny.json"
expect_error "schedule from /dev/zero" 2 "/dev/zero.*larger than 64 MiB" -- limited "$RUN" "$BAD/tiny_conv.onnx" /dev/zero --dry-run
expect_error "device profile from /dev/zero" 2 "/dev/zero.*larger than 1 MiB" -- limited "$OPT" "$BAD/tiny_conv.onnx" --cost simulated --device-profile /dev/zero
expect_error "model from /dev/zero" 2 "/dev/zero.*not a regular file" -- limited "$OPT" /dev/zero
truncate -s 65M "$WORK/huge.json"
expect_error "schedule over the size limit" 2 "huge\.json.*larger than 64 MiB" -- limited "$RUN" "$BAD/tiny_conv.onnx" "$WORK/huge.json" --dry-run
# 9. An empty schedule is blamed on the schedule, also when the model needs --batch.
: >"$WORK/empty.json"
expect_error "empty schedule, symbolic model" 2 "empty\.json.*empty" -- limited "$RUN" "$BAD/symbolic_batch.onnx" "$WORK/empty.json" --dry-run
echo '{"format": "ios-schedule", "version": 1}' >"$WORK/nobatch.json"
expect_error "schedule without a batch, symbolic model" 2 "nobatch\.json.*'model'" -- limited "$RUN" "$BAD/symbolic_batch.onnx" "$WORK/nobatch.json" --dry-run
# An empty .npy input: refused for its shape, no crash.
expect_error "empty .npy input" 2 "empty\.npy|shape" -- limited "$RUN" "$BAD/tiny_conv.onnx" --backend cpu --input "$H/empty.npy" --iterations 1
finish
