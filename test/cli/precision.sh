# Half precision from the command line (docs/cli.md, *Precision*):
#  - ios-optimize --precision fp16|bf16 converts a float32 model, records the
#    precision in the schedule, and ios-run runs the original file at it;
#  - a typed file (onnx_models/convert_half.py) schedules at its own type;
#  - ios-run refuses a schedule at another precision, unless --retarget
#    between the 16-bit types;
#  - bad input is one line and exit 2 with nothing written: element types ios
#    does not run (complex, float8, int8 quantization), --keep-fp32 naming
#    nothing, a typed model with --precision fp32, weights beyond float16's
#    range, and a run that overflows float16 (named by node).
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
M="$WORK/models"
mkdir -p "$M"

field() { $PY -c 'import json, sys; d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d = d[int(k)] if isinstance(d, list) else d[k]
print(d)' "$@"; }

# Small models written here: a conv -> relu -> softmax net (weights of
# `scale`), and models of element types ios does not run.
$PY - "$M" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
out = sys.argv[1]
rng = np.random.RandomState(0)

def net(name, scale):
    w = (rng.uniform(-1, 1, (4, 3, 3, 3)) * scale).astype(np.float32)
    nodes = [helper.make_node("Conv", ["input", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
             helper.make_node("Softmax", ["f"], ["output"], name="softmax", axis=1)]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 4, 4])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 64])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, producer_name="ios test/cli/precision.sh", opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, f"{out}/{name}.onnx")

net("small", 0.5)                # fits float16
net("huge_weight", 1e5)          # weights beyond 65504
net("overflowing", 3e4)          # weights fit, their sums overflow float16

def io_model(name, elem_type, nodes, inputs=None):
    g = helper.make_graph(nodes, name, inputs or [helper.make_tensor_value_info("input", elem_type, [1, 4])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, producer_name="ios test/cli/precision.sh", opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, f"{out}/{name}.onnx")

io_model("complex_input", TensorProto.COMPLEX64, [helper.make_node("Relu", ["input"], ["output"], name="relu")])
io_model("quantized", TensorProto.FLOAT, [
    helper.make_node("QuantizeLinear", ["input", "s", "z"], ["q"], name="quantize"),
    helper.make_node("DequantizeLinear", ["q", "s", "z"], ["output"], name="dequantize")])
m = onnx.load(f"{out}/quantized.onnx")
m.graph.initializer.extend([numpy_helper.from_array(np.array(0.1, np.float32), "s"),
                            numpy_helper.from_array(np.array(0, np.int8), "z")])
onnx.save(m, f"{out}/quantized.onnx")
# A Cast to float8e4m3fn (element type 17 of IR 9), written by number.
m = helper.make_model(helper.make_graph(
    [helper.make_node("Cast", ["input"], ["output"], name="to_float8", to=17)], "float8",
    [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4])],
    [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4])]),
    producer_name="ios test/cli/precision.sh", opset_imports=[helper.make_opsetid("", 19)])
m.ir_version = 9
open(f"{out}/float8.onnx", "wb").write(m.SerializeToString())
np.save(f"{out}/input.npy", rng.randn(1, 3, 4, 4).astype(np.float32))
EOF
$PY "$IOS_SOURCE_DIR/onnx_models/convert_half.py" "$M/small.onnx" "$M/small.fp16.onnx" --to fp16 >/dev/null &&
  $PY "$IOS_SOURCE_DIR/onnx_models/convert_half.py" "$M/small.onnx" "$M/small.bf16.onnx" --to bf16 >/dev/null && ok ||
  fail "convert_half.py failed"

# --- conversion, recorded ---------------------------------------------------------
for p in fp16 bf16; do
  expect_ok "--precision $p" -- "$OPT" "$M/small.onnx" --precision $p -o "$WORK/$p.json"
  [ "$(field "$WORK/$p.json" precision name)" = $p ] && ok || fail "$p: precision.name not recorded"
  [ "$(field "$WORK/$p.json" precision source)" = converted ] && ok || fail "$p: not recorded as converted"
  [ "$(field "$WORK/$p.json" precision io)" = float32 ] && ok || fail "$p: inputs and outputs not float32"
  # The Softmax stays float32 (a sensitive operator), so the graph has Casts.
  [ "$(field "$WORK/$p.json" precision tensors float32)" -ge 3 ] && ok || fail "$p: no float32 tensors left"
  expect_ok "ios-run $p on the CPU" -- "$RUN" "$M/small.onnx" "$WORK/$p.json" --backend cpu --iterations 1 --check \
    --input "$M/input.npy"
  grep -q "batch 1, precision $p," "$WORK/stdout" && ok || fail "ios-run $p: the report does not name the precision: $(head -c 600 "$WORK/stdout")"
done
expect_ok "tf32" -- "$OPT" "$M/small.onnx" -o "$WORK/tf32.json"
[ "$(field "$WORK/tf32.json" precision name)" = tf32 ] && ok || fail "tf32: precision.name not recorded"
[ "$(field "$WORK/tf32.json" precision tensors float16)" = 0 ] && ok || fail "tf32: float16 tensors"
expect_ok "--keep-fp32 by name and by type" -- "$OPT" "$M/small.onnx" --precision fp16 --keep-fp32 conv,Relu \
  -o "$WORK/keep.json"
[ "$(field "$WORK/keep.json" precision keep_fp32 0)" = conv ] && ok || fail "--keep-fp32 not recorded"
[ "$(field "$WORK/keep.json" precision tensors float16)" -lt "$(field "$WORK/fp16.json" precision tensors float16)" ] &&
  ok || fail "--keep-fp32 conv,Relu left as many float16 tensors"
expect_ok "--half-io" -- "$OPT" "$M/small.onnx" --precision bf16 --half-io -o "$WORK/halfio.json"
[ "$(field "$WORK/halfio.json" precision io)" = half ] && ok || fail "--half-io not recorded"
expect_ok "ios-run --half-io" -- "$RUN" "$M/small.onnx" "$WORK/halfio.json" --backend cpu --iterations 1

# --- typed files: their own types ----------------------------------------------------
for p in fp16 bf16; do
  expect_ok "typed $p" -- "$OPT" "$M/small.$p.onnx" -o "$WORK/typed-$p.json"
  [ "$(field "$WORK/typed-$p.json" precision name)" = $p ] && ok || fail "typed $p: precision not the file's"
  [ "$(field "$WORK/typed-$p.json" precision source)" = model ] && ok || fail "typed $p: recorded as converted"
  expect_ok "typed $p with --precision $p" -- "$OPT" "$M/small.$p.onnx" --precision $p -o "$WORK/typed2.json"
  expect_ok "ios-run typed $p" -- "$RUN" "$M/small.$p.onnx" "$WORK/typed-$p.json" --backend cpu --iterations 1 --check
done

# --- ios-run at another precision ------------------------------------------------------
expect_error "fp16 schedule at --precision fp32" 2 "^ios-run: error: .*fp16.json: the schedule was made for precision fp16 .* and --precision fp32 computes another graph" -- \
  "$RUN" "$M/small.onnx" "$WORK/fp16.json" --backend sim --precision fp32
expect_error "fp16 schedule at bf16" 2 "pass --retarget to run its units at bf16" -- \
  "$RUN" "$M/small.onnx" "$WORK/fp16.json" --backend cpu --precision bf16
expect_ok "fp16 schedule retargeted to bf16" -- "$RUN" "$M/small.onnx" "$WORK/fp16.json" --backend cpu --precision bf16 \
  --retarget --iterations 1 --check
expect_error "tf32 and fp16 schedules together" 2 "run schedules of one precision together" -- \
  "$RUN" "$M/small.onnx" "$WORK/fp16.json" "$WORK/tf32.json" --backend sim
expect_ok "tf32 schedule at fp32 math" -- "$RUN" "$M/small.onnx" "$WORK/tf32.json" --backend sim --precision fp32

# --- refusals: one line, exit 2, nothing written ----------------------------------------
rm -f "$WORK/x.json"
expect_error "--keep-fp32 naming nothing" 2 "^ios-optimize: error: .*small.onnx: --keep-fp32 'nothing' names no node and no operator type" -- \
  "$OPT" "$M/small.onnx" --precision fp16 --keep-fp32 conv,nothing -o "$WORK/x.json"
expect_error "--keep-fp32 without a conversion" 2 "apply to a conversion to half precision; add --precision fp16" -- \
  "$OPT" "$M/small.onnx" --keep-fp32 conv -o "$WORK/x.json"
expect_error "typed fp16 at --precision fp32" 2 "small.fp16.onnx: the model is typed fp16 .*--precision fp32 would not compute it as written" -- \
  "$OPT" "$M/small.fp16.onnx" --precision fp32 -o "$WORK/x.json"
expect_error "typed bf16 at --precision fp16" 2 "the model is typed bf16" -- \
  "$OPT" "$M/small.bf16.onnx" --precision fp16 -o "$WORK/x.json"
expect_error "typed file with --keep-fp32" 2 "already typed fp16; drop them" -- \
  "$OPT" "$M/small.fp16.onnx" --keep-fp32 conv -o "$WORK/x.json"
expect_error "weights beyond float16" 2 "huge_weight.onnx: weight 'w' of node 'conv' \(Conv\) holds .* beyond float16's largest value 65504; keep the node in float32 \(--keep-fp32 conv\)" -- \
  "$OPT" "$M/huge_weight.onnx" --precision fp16 -o "$WORK/x.json"
expect_ok "the same weights at bf16" -- "$OPT" "$M/huge_weight.onnx" --precision bf16 -o "$WORK/huge.bf16.json"
expect_error "complex input" 2 "graph input 'input' has element type 14 \\(complex64\\); ios runs float32, float16 and bfloat16 models only" -- \
  "$OPT" "$M/complex_input.onnx" -o "$WORK/x.json"
expect_error "int8 quantization" 2 "QuantizeLinear" -- "$OPT" "$M/quantized.onnx" -o "$WORK/x.json"
expect_error "float8 Cast" 2 "casts to element type 17 \(float8 or int4, IR 9-10\)" -- "$OPT" "$M/float8.onnx" -o "$WORK/x.json"
[ ! -e "$WORK/x.json" ] && ok || fail "a refused model left a schedule"

# --- --write-onnx: the converted graph for other runtimes ----------------------------------
for p in fp16 bf16; do
  expect_ok "--write-onnx $p" -- "$OPT" "$M/small.onnx" --precision $p -o "$WORK/w.json" --write-onnx "$WORK/small.ios-$p.onnx"
  $PY - "$WORK/small.ios-$p.onnx" $p <<'EOF2' && ok || fail "--write-onnx $p: not the converted graph"
import sys, onnx
from onnx import TensorProto
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
half = TensorProto.FLOAT16 if sys.argv[2] == "fp16" else TensorProto.BFLOAT16
assert m.producer_name == "ios-optimize --write-onnx", m.producer_name
assert [t.data_type for t in m.graph.initializer if t.name.startswith("w")] == [half]
casts = [n for n in m.graph.node if n.op_type == "Cast"]
assert {c.attribute[0].i for c in casts} == {half, TensorProto.FLOAT}, casts
assert m.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT
assert [o.name for o in m.graph.output] == ["output"]
EOF2
done
# ONNX Runtime runs the float16 file ios wrote: its outputs are ios's CPU
# reference's within a few float16 rounding steps (it rounds after every
# ONNX node, ios after every kernel).
rm -rf "$WORK/ref_out"
expect_ok "ios-run fp16 outputs" -- "$RUN" "$M/small.onnx" "$WORK/fp16.json" --backend cpu --iterations 1 \
  --input "$M/input.npy" --output-dir "$WORK/ref_out"
if node "$IOS_SOURCE_DIR/tools/ort_run.js" "$WORK/small.ios-fp16.onnx" "$M/input.npy" "$WORK/ort.npy" 2>"$WORK/ort.err"; then
  $PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]).astype(np.float64), np.load(sys.argv[2]).astype(np.float64)
d = np.abs(a - b).max(); print("ios vs ONNX Runtime on the written fp16 file: max |diff|", d)
sys.exit(0 if d <= 4 * 2.0**-10 * max(np.abs(a).max(), 1e-3) else 1)' "$WORK/ref_out/output.npy" "$WORK/ort.npy" && ok ||
    fail "ONNX Runtime's run of the written fp16 file differs from ios's"
else
  fail "ONNX Runtime could not run the written fp16 file: $(tail -c 400 "$WORK/ort.err")"
fi
expect_error "--write-onnx without a conversion" 2 "^ios-optimize: error: --write-onnx writes the graph ios converts to half precision" -- \
  "$OPT" "$M/small.onnx" -o "$WORK/x.json" --write-onnx "$WORK/x.onnx"
expect_error "--write-onnx of a typed file" 2 "already typed" -- \
  "$OPT" "$M/small.fp16.onnx" -o "$WORK/x.json" --write-onnx "$WORK/x.onnx"
expect_error "--write-onnx over the model" 2 "write-onnx" -- \
  "$OPT" "$M/small.onnx" --precision fp16 -o "$WORK/x.json" --write-onnx "$M/small.onnx"
[ ! -e "$WORK/x.onnx" ] && [ ! -e "$WORK/x.json" ] && ok || fail "a refused --write-onnx left a file"

# --- overflow at run time, named by node ----------------------------------------------------
expect_ok "overflowing model converts" -- "$OPT" "$M/overflowing.onnx" --precision fp16 -o "$WORK/over.json"
rm -rf "$WORK/over_out"
expect_error "float16 overflow" 2 "^ios-run: error: node 'conv' \(Conv\) wrote [0-9]+ of 64 values of '.*' as inf or NaN from finite inputs: they overflow float16" -- \
  "$RUN" "$M/overflowing.onnx" "$WORK/over.json" --backend cpu --iterations 1 --input "$M/input.npy" \
  --output-dir "$WORK/over_out"
[ -z "$(ls -A "$WORK/over_out" 2>/dev/null)" ] && ok || fail "an overflowing run wrote outputs"
expect_ok "the same run at bf16" -- "$OPT" "$M/overflowing.onnx" --precision bf16 -o "$WORK/over.bf16.json"
expect_ok "bf16 does not overflow" -- "$RUN" "$M/overflowing.onnx" "$WORK/over.bf16.json" --backend cpu --iterations 1 \
  --input "$M/input.npy"
finish
