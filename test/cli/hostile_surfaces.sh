# Hostile inputs, third round: the surfaces added since the second (schedule
# forms and launch modes, --retarget, the search options, Einsum, several
# outputs, concurrent runs). The models are made here with ONNX's helpers.
# Refusals get exit 2 and one line naming the file, node, field or option.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
M="$WORK/models"
mkdir -p "$M"
$PY - "$M" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
def save(name, nodes, inputs, outputs, inits=(), opset=17, ir=8):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    onnx.save(m, f"{out}/{name}.onnx")
def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)
def conv_w(name, cout, cin):
    return numpy_helper.from_array(np.random.RandomState(len(name)).rand(cout, cin, 3, 3).astype(np.float32) * 0.1, name)

# Einsum in the implicit form with uppercase letters (valid ONNX): one
# operand in order, one permuted (the output is its letters sorted), and at
# opset 18 beside a Split of num_outputs (the opset adapter's inference).
save("einsum_upper", [helper.make_node("Einsum", ["x"], ["y"], equation="BCHW"),
                      helper.make_node("Einsum", ["x"], ["z"], equation="HWBC")],
     [vi("x", [1, 2, 3, 4])], [vi("y", [1, 2, 3, 4]), vi("z", [3, 4, 1, 2])])
save("einsum_upper_opset18", [helper.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2),
                              helper.make_node("Einsum", ["a"], ["y"], equation="BCHW"),
                              helper.make_node("Relu", ["b"], ["r"])],
     [vi("x", [1, 2, 3, 4])], [vi("y", [1, 1, 3, 4]), vi("r", [1, 1, 3, 4])], opset=18)

# Convolutions of distinct shapes in a chain: with --max-block-units 1, one
# distinct block each, so a search with many threads starts many.
nodes, inits, prev, cin = [], [], "x", 3
for k in range(24):
    cout = 4 + k
    inits.append(conv_w(f"w{k}", cout, cin))
    nodes.append(helper.make_node("Conv", [prev, f"w{k}"], [f"c{k}"], pads=[1, 1, 1, 1]))
    prev, cin = f"c{k}", cout
save("distinct_blocks", nodes, [vi("x", ["N", 3, 16, 16])], [vi(prev, ["N", cin, 16, 16])], inits)
# One large convolution: the CPU backend splits it over its threads.
save("big_conv", [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
     [vi("x", [1, 64, 64, 64])], [vi("y", [1, 64, 64, 64])], [conv_w("w", 64, 64)])

# Shape arithmetic that takes one folding round per link (a Reshape's shape
# is known only once the Shape before it is folded), beside many nodes that
# need none.
chain, other = 30, 3000
nodes = []
t = "x"
for k in range(chain):
    nodes.append(helper.make_node("Shape", [t], [f"s{k}"]))
    nodes.append(helper.make_node("Reshape", [t, f"s{k}"], [f"t{k}"]))
    t = f"t{k}"
nodes.append(helper.make_node("Relu", [t], ["y"]))
u = "x2"
for k in range(other):
    nodes.append(helper.make_node("Relu" if k % 2 else "Sigmoid", [u], [f"u{k}"]))
    u = f"u{k}"
save("fold_chain", nodes, [vi("x", [1, 8]), vi("x2", [1, 8])], [vi("y", [1, 8]), vi(u, [1, 8])])

# Outputs that are other tensors under new names: Identity, Dropout, an
# identity Einsum, two of one tensor.
save("renamed_outputs", [helper.make_node("Relu", ["x"], ["r"]),
                         helper.make_node("Identity", ["r"], ["y1"]),
                         helper.make_node("Dropout", ["r"], ["y2"]),
                         helper.make_node("Einsum", ["r"], ["y3"], equation="ij->ij")],
     [vi("x", [2, 3])], [vi("y1", [2, 3]), vi("y2", [2, 3]), vi("y3", [2, 3])])

# int64 Range beyond 2^53 and near 2^63: its element count, exactly, is the
# length of a tensor added to x (3 elements each). Its operands come from
# folded Adds, so that ONNX's inference cannot count them first: the folded
# values decide.
def range_model(name, start, limit, delta):
    save(name, [helper.make_node("Add", ["start0", "zero"], ["start"]),
                helper.make_node("Add", ["limit0", "zero"], ["limit"]),
                helper.make_node("Add", ["delta0", "zero"], ["delta"]),
                helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
                helper.make_node("Shape", ["r"], ["n"]),
                helper.make_node("ConstantOfShape", ["n"], ["z"],
                                 value=numpy_helper.from_array(np.array([1.0], dtype=np.float32))),
                helper.make_node("Add", ["x", "z"], ["y"])],
         [vi("x", [3])], [vi("y", [3])],
         [i64("start0", start), i64("limit0", limit), i64("delta0", delta), i64("zero", 0)])
range_model("range_2p53", 2**53, 2**53 + 3, 1)          # 3 elements; in double, 4
range_model("range_near_max", 2**63 - 10, 2**63 - 1, 3)  # 3 elements; in double, 0
range_model("range_near_min", -2**63, -2**63 + 9, 3)     # 3 elements

# A static batch above ios's limit (2^20), and a model without operators.
save("batch_above_limit", [helper.make_node("Relu", ["x"], ["y"])],
     [vi("x", [2**20 + 1, 1])], [vi("y", [2**20 + 1, 1])])
save("no_operators", [helper.make_node("Relu", ["x"], ["unused"])], [vi("x", [1, 4])], [vi("x", [1, 4])])
save("relu", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["N", 4])], [vi("y", ["N", 4])])
PYEOF

# 1. Einsum, implicit form, uppercase letters: both programs, no crash.
expect_ok "Einsum BCHW and HWBC (implicit, uppercase)" -- limited "$OPT" "$M/einsum_upper.onnx" --cost simulated -o "$WORK/einsum.json"
expect_ok "Einsum BCHW runs" -- limited "$RUN" "$M/einsum_upper.onnx" "$WORK/einsum.json" --backend cpu --check --iterations 1 --warmup 0
expect_ok "Einsum BCHW beside an opset-18 Split" -- limited "$OPT" "$M/einsum_upper_opset18.onnx" --cost simulated -o "$WORK/einsum18.json"

# 2. Threads the system refuses: fewer threads or a clear error, never an
# abort. 1 GiB stacks under a 3 GiB address space leave room for two.
few_threads() { (ulimit -s 1048576; ulimit -v $((3 * 1024 * 1024)); exec timeout -s KILL 60 "$@"); }
if [ "$asan" = true ]; then
  ok; ok  # ASan reserves terabytes of address space: ulimit -v cannot apply
else
  rc=0; few_threads "$OPT" "$M/distinct_blocks.onnx" --batch 1 --cost simulated --threads 600 --max-block-units 1 -o "$WORK/threads.json" \
    >"$WORK/stdout" 2>"$WORK/stderr" || rc=$?
  if [ "$rc" = 0 ] && grep -q "search threads" "$WORK/stderr"; then ok
  else fail "--threads 600 with threads refused: exit $rc, expected 0 and a warning: $(head -c 400 "$WORK/stderr")"; fi
  expect_error "ios-run --threads 400 with threads refused" 2 "not enough memory: .* for 400 threads.*or --threads" -- \
    few_threads "$RUN" "$M/big_conv.onnx" --backend cpu --threads 400 --iterations 1 --warmup 0
fi

# 3. Folding that takes 30 rounds: ONNX infers the whole graph once, then
# only the nodes whose shapes are still unknown (not 30 x 3000 nodes).
"$OPT" "$M/fold_chain.onnx" --cost simulated -v --analyze >"$WORK/stdout" 2>"$WORK/stderr" || fail "fold_chain: $(tail -c 400 "$WORK/stderr")"
later=$(sed -n 's/.*ONNX shape inference: the whole graph once, then \([0-9]*\) nodes in \([0-9]*\) later rounds.*/\1 \2/p' "$WORK/stderr")
if [ -n "$later" ] && [ "${later% *}" -lt 3000 ] && [ "${later#* }" -ge 30 ]; then ok
else fail "fold_chain: later rounds inferred '$later' (nodes rounds), expected fewer than the 3000 unchanged nodes over 30 rounds"; fi

# 4. A schedule whose model.batch contradicts its input shapes.
expect_ok "a schedule of relu at batch 1" -- "$OPT" "$M/relu.onnx" --batch 1 --cost simulated -o "$WORK/relu.json"
edit() {  # edit IN OUT PYTHON-STATEMENT (on the document `d`)
  $PY - "$1" "$2" "$3" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(d))
PYEOF
}
edit "$WORK/relu.json" "$WORK/batch8.json" 'd["model"]["batch"] = 8'
expect_error "model.batch 8 with inputs of batch 1" 2 "batch8\.json: field model\.batch is 8 but no input in model\.inputs has dimension 0 of 8" -- \
  "$RUN" "$M/relu.onnx" "$WORK/batch8.json" --backend sim
expect_error "model.batch 8 with inputs of batch 1 (--dry-run)" 2 "batch8\.json: field model\.batch is 8" -- \
  "$RUN" "$M/relu.onnx" "$WORK/batch8.json" --dry-run

# 5. Outputs named by Identity, Dropout and an identity Einsum keep their names.
expect_ok "renamed outputs" -- "$OPT" "$M/renamed_outputs.onnx" --cost simulated -o "$WORK/renamed.json"
expect_ok "renamed outputs run" -- "$RUN" "$M/renamed_outputs.onnx" "$WORK/renamed.json" --backend cpu --iterations 1 --warmup 0 --output-dir "$WORK/out"
for y in y1 y2 y3; do [ -f "$WORK/out/$y.npy" ] && ok || fail "--output-dir wrote no $y.npy: $(ls "$WORK/out")"; done
expect_ok "--reference y1= is accepted" -- "$RUN" "$M/renamed_outputs.onnx" "$WORK/renamed.json" --backend cpu --iterations 1 --warmup 0 --reference "y1=$WORK/out/y1.npy"

# 6. int64 Range counted exactly.
for r in range_2p53 range_near_max range_near_min; do
  expect_ok "int64 Range $r" -- limited "$OPT" "$M/$r.onnx" --cost simulated -o "$WORK/$r.json"
done

# 7. A name given twice.
expect_error "--reference twice for one output" 2 "--reference is given twice for 'y1'" -- \
  "$RUN" "$M/renamed_outputs.onnx" "$WORK/renamed.json" --backend cpu --reference "y1=$WORK/out/y1.npy" --reference "y1=$WORK/out/y2.npy"
expect_error "--input twice for one input" 2 "--input is given twice for 'x'" -- \
  "$RUN" "$M/renamed_outputs.onnx" "$WORK/renamed.json" --backend cpu --input "x=$WORK/out/y1.npy" --input "x=$WORK/out/y2.npy"
expect_error "--input-shape twice for one input" 2 "--input-shape is given twice for 'x'" -- \
  "$OPT" "$M/relu.onnx" --cost simulated --input-shape x:1x4 --input-shape x:2x4 -o "$WORK/x.json"

# 8. NaN and negative values of the numeric options.
expect_error "--time-limit nan" 2 "--time-limit" -- "$OPT" "$M/relu.onnx" --batch 1 --cost simulated --time-limit nan -o "$WORK/x.json"
expect_error "--max-block-bound nan" 2 "--max-block-bound" -- "$OPT" "$M/relu.onnx" --batch 1 --cost simulated --max-block-bound nan -o "$WORK/x.json"
expect_error "--time-limit inf" 2 "--time-limit" -- "$OPT" "$M/relu.onnx" --batch 1 --cost simulated --time-limit inf -o "$WORK/x.json"
for t in "--rtol nan" "--rtol -1" "--atol -0.5" "--atol nan" "--duration nan"; do
  # shellcheck disable=SC2086
  expect_error "ios-run $t" 2 "${t%% *}" -- "$RUN" "$M/relu.onnx" "$WORK/relu.json" --backend cpu --check $t
done

# 9. A static batch above the limit is refused by ios-optimize, not written.
expect_error "static batch 2^20 + 1" 2 "batch_above_limit\.onnx: input 'x' has shape .*above ios's limit of 1048576" -- \
  limited "$OPT" "$M/batch_above_limit.onnx" --cost simulated -o "$WORK/x.json"

# 10. One rule for options without effect.
expect_error "--retarget without a schedule" 2 "--retarget has no effect without a schedule file" -- \
  "$RUN" "$M/relu.onnx" --batch 1 --backend sim --retarget
expect_error "--retarget at the schedule's own batch" 2 "--retarget has no effect without --batch, --input-shape or --precision fp16|bf16" -- \
  "$RUN" "$M/relu.onnx" "$WORK/relu.json" --backend sim --retarget
expect_error "--threads with greedy" 2 "--threads has no effect with --scheduler greedy" -- \
  "$OPT" "$M/relu.onnx" --batch 1 --cost simulated --scheduler greedy --threads 2 -o "$WORK/x.json"

# 11. --form with measured costs: a usage error before any work, GPU or not.
expect_error "--form streamed --cost measured" 2 "--form streamed needs whole-plan predictions" -- \
  "$OPT" "$M/relu.onnx" --batch 1 --cost measured --form streamed -o "$WORK/x.json"

# 12. Fields of the other form are refused, whatever their value.
expect_ok "a LIOS schedule" -- "$OPT" "$M/distinct_blocks.onnx" --batch 1 --cost simulated --scheduler lios -o "$WORK/lios.json"
for v in '"stages"' '"dependencies"' '5' 'None'; do
  edit "$WORK/lios.json" "$WORK/lios_barriers.json" "d['barriers'] = $v"
  expect_error "barriers $v in a LIOS schedule" 2 "lios_barriers\.json: field 'barriers' belongs to staged schedules and this one is streamed" -- \
    "$RUN" "$M/distinct_blocks.onnx" "$WORK/lios_barriers.json" --dry-run
done
edit "$WORK/relu.json" "$WORK/staged_launches.json" 'd["launches"] = []'
expect_error "launches in a staged schedule" 2 "field 'launches' belongs to streamed schedules" -- \
  "$RUN" "$M/relu.onnx" "$WORK/staged_launches.json" --dry-run

# 13. Two runs writing one file at once: the second is refused while the
# first holds it. The first waits on a FIFO for its input, which this shell
# holds open (fd 3) so that the read blocks instead of ending empty.
export IOS_LOCK_DIR="$WORK/locks"
mkdir -p "$IOS_LOCK_DIR"
mkfifo "$WORK/input.fifo"
exec 3<>"$WORK/input.fifo"
"$RUN" "$M/relu.onnx" "$WORK/relu.json" --backend cpu --iterations 1 --warmup 0 --input "x=$WORK/input.fifo" \
  --export-times "$WORK/times.json" >"$WORK/first.out" 2>"$WORK/first.err" 3>&- &
first=$!
for _ in $(seq 100); do ls -l "/proc/$first/fd" 2>/dev/null | grep -q "$IOS_LOCK_DIR" && break; sleep 0.1; done
expect_error "a second run writing the same --export-times" 2 "--export-times .*times\.json: another ios run is writing this file now" -- \
  "$RUN" "$M/relu.onnx" "$WORK/relu.json" --backend cpu --iterations 1 --warmup 0 --export-times "$WORK/times.json"
$PY -c 'import numpy as np, sys; np.save(sys.argv[1], np.ones((1, 4), np.float32))' "$WORK/ones.npy"
cat "$WORK/ones.npy" >"$WORK/input.fifo"
exec 3>&-
wait "$first" && ok || fail "the first run failed: $(cat "$WORK/first.err")"
expect_ok "the file is free once the first run ends" -- \
  "$RUN" "$M/relu.onnx" "$WORK/relu.json" --backend cpu --iterations 1 --warmup 0 --export-times "$WORK/times.json"
expect_ok "standard output and devices are not locked" -- "$OPT" "$M/relu.onnx" --batch 1 --cost simulated -o - --report-json /dev/null
unset IOS_LOCK_DIR

# 14. Names from the schedule are echoed as excerpts.
edit "$WORK/relu.json" "$WORK/names.json" 'd["scheduler"]["name"] = "ios\nFAKE LINE\x1b[31m" + "x" * 1_000_000; d["device"]["name"] = "dev\nFAKE\x00\x1b[2J" + "y" * 1_000_000'
expect_ok "hostile names, --dry-run" -- "$RUN" "$M/relu.onnx" "$WORK/names.json" --dry-run
if grep -q "^FAKE" "$WORK/stdout" || grep -q $'\x1b' "$WORK/stdout" || [ "$(wc -c <"$WORK/stdout")" -gt 4000 ]; then
  fail "the dry-run header echoes the scheduler name raw: $(head -c 300 "$WORK/stdout")"; else ok; fi
expect_ok "hostile names, sim" -- "$RUN" "$M/relu.onnx" "$WORK/names.json" --backend sim --iterations 1 --warmup 0
if grep -q "^FAKE" "$WORK/stderr" || grep -q $'\x1b' "$WORK/stderr" || [ "$(wc -c <"$WORK/stderr")" -gt 4000 ]; then
  fail "the device warning echoes the device name raw: $(head -c 300 "$WORK/stderr")"; else ok; fi

# 15. Messages: a duplicate input is called a duplicate; no operators names the file.
edit "$WORK/relu.json" "$WORK/dup_inputs.json" 'd["model"]["inputs"].append({"name": "x", "shape": [1, 5]})'
expect_error "model.inputs lists x twice" 2 "dup_inputs\.json: .*input 'x' (twice|again)" -- "$RUN" "$M/relu.onnx" "$WORK/dup_inputs.json" --dry-run
expect_error "model.inputs lists x twice (--batch)" 2 "dup_inputs\.json: .*input 'x' (twice|again)" -- "$RUN" "$M/relu.onnx" "$WORK/dup_inputs.json" --dry-run --batch 1
expect_error "a model without operators" 2 "no_operators\.onnx: the model has no operators to schedule" -- \
  "$OPT" "$M/no_operators.onnx" --cost simulated -o "$WORK/x.json"

# 16. --report-json says the form chosen, both forms' predictions and the launch mode.
expect_ok "report of --form best" -- "$OPT" "$M/distinct_blocks.onnx" --batch 1 --cost simulated --form best --launch plain -o "$WORK/best.json" --report-json "$WORK/best.report"
expect_ok "report of the default form" -- "$OPT" "$M/distinct_blocks.onnx" --batch 1 --cost simulated -o "$WORK/default.json" --report-json "$WORK/default.report"
$PY - "$WORK/best.report" "$WORK/default.report" <<'PYEOF' && ok || fail "--report-json lacks the form or launch fields"
import json, sys
best, default = (json.load(open(p)) for p in sys.argv[1:])
assert best["form"]["option"] == "best" and best["form"]["chosen"] in ("staged", "streamed"), best.get("form")
assert best["form"]["staged_predicted_ms"] > 0 and best["form"]["streamed_predicted_ms"] > 0, best["form"]
assert best["launch"] == "plain", best.get("launch")
assert default["form"] == {"option": "staged", "chosen": "staged", "staged_predicted_ms": default["predicted_latency_ms"],
                           "streamed_predicted_ms": None}, default.get("form")
assert default["launch"] == "graph", default.get("launch")
PYEOF
finish
