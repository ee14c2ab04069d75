# A model with the element-wise arithmetic of normalisation layers and GELU,
# written with ONNX's Python helpers: Div by a constant, Erf, Sub and Div with
# the constant on the left (c - x and c / x, which do not commute), Pow by a
# constant, Sqrt, Exp, Reciprocal, and a Sub and Div of two activations. ios-optimize schedules it for
# every scheduler and ios-run --backend cpu matches a float64 numpy truth.
# A Pow whose exponent is computed at run time is refused with exit 2 and one
# line naming the node.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
$PY - "$WORK" <<'PY' || { fail "could not write the element-wise models"; finish; exit 1; }
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

work = sys.argv[1]
rng = np.random.default_rng(7)
x = rng.uniform(-1, 1, (1, 4, 5, 5)).astype(np.float32)
w1 = rng.uniform(-0.5, 0.5, (6, 4, 3, 3)).astype(np.float32)
b1 = rng.uniform(-0.5, 0.5, (6,)).astype(np.float32)
w2 = rng.uniform(-0.5, 0.5, (6, 4, 1, 1)).astype(np.float32)
consts = {
    "sqrt2": np.array(1.4142135, np.float32),
    "one": np.array(1.0, np.float32),
    "shift": rng.uniform(2.0, 3.0, (6, 1, 1)).astype(np.float32),
    "two": np.array(2.0, np.float32),
    "eps": np.array(1e-3, np.float32),
}
nodes = [
    # The first convolution's epilogue: Div by a constant, Erf, c - x, Pow by a
    # constant, Add, Sqrt, c / x.
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
    helper.make_node("Div", ["c1", "sqrt2"], ["d"], name="div_const"),
    helper.make_node("Erf", ["d"], ["e"], name="erf"),
    helper.make_node("Sub", ["shift", "e"], ["s"], name="const_minus"),
    helper.make_node("Pow", ["s", "two"], ["p"], name="square"),
    helper.make_node("Add", ["p", "eps"], ["pe"], name="add_eps"),
    helper.make_node("Sqrt", ["pe"], ["r"], name="sqrt"),
    helper.make_node("Div", ["one", "r"], ["t1"], name="const_over"),
    # The second's: Exp, Reciprocal.
    helper.make_node("Conv", ["x", "w2"], ["c2"], name="conv2"),
    helper.make_node("Exp", ["c2"], ["ex"], name="exp"),
    helper.make_node("Reciprocal", ["ex"], ["t2"], name="reciprocal"),
    # Sub and Div of two activations.
    helper.make_node("Sub", ["t2", "t1"], ["diff"], name="sub_two"),
    helper.make_node("Div", ["diff", "t2"], ["y"], name="div_two"),
]
inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"))]
inits += [numpy_helper.from_array(v, k) for k, v in consts.items()]
graph = helper.make_graph(
    nodes, "elementwise",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 5, 5])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, f"{work}/elementwise.onnx")
np.save(f"{work}/x.npy", x)

# float64 truth
from math import erf
xd = x.astype(np.float64)
xp = np.pad(xd, ((0, 0), (0, 0), (1, 1), (1, 1)))
c1 = np.zeros((1, 6, 5, 5))
for i in range(3):
    for j in range(3):
        c1 += np.einsum("mc,nchw->nmhw", w1[:, :, i, j].astype(np.float64), xp[:, :, i:i + 5, j:j + 5])
c1 += b1.astype(np.float64)[None, :, None, None]
e = np.vectorize(erf)(c1 / float(consts["sqrt2"]))
t1 = 1.0 / np.sqrt((consts["shift"].astype(np.float64) - e) ** 2 + float(consts["eps"]))
c2 = np.einsum("mc,nchw->nmhw", w2[:, :, 0, 0].astype(np.float64), xd)
t2 = 1.0 / np.exp(c2)
np.save(f"{work}/y.npy", ((t2 - t1) / t2).astype(np.float32))

# Pow with a run-time exponent: refused.
bad = helper.make_graph(
    [helper.make_node("Pow", ["x", "e"], ["y"], name="runtime_pow")], "bad_pow",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
     helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
bad_model = helper.make_model(bad, opset_imports=[helper.make_opsetid("", 13)])
bad_model.ir_version = 8
onnx.save(bad_model, f"{work}/runtime_pow.onnx")
PY
model="$WORK/elementwise.onnx"
for scheduler in sequential greedy ios lios nimble; do
  out="$WORK/elementwise.$scheduler.json"
  expect_ok "elementwise $scheduler" -- "$OPT" "$model" --scheduler "$scheduler" --cost simulated -o "$out" --quiet || continue
  expect_ok "elementwise $scheduler cpu" -- "$RUN" "$model" "$out" --backend cpu --input "x=$WORK/x.npy" \
    --reference "y=$WORK/y.npy" --rtol 1e-5 --atol 1e-5 --iterations 1 --warmup 0 --quiet
done
# Every unary node and every binary one with a constant operand (on either
# side) is an epilogue of its convolution; Sub and Div of two activations are
# element-wise units: 13 nodes make 4 units.
expect_ok "elementwise units" -- "$OPT" "$model" --analyze
kinds=$(grep -oE "[0-9]+ (conv|elementwise)" "$WORK/stdout" |
  awk '{n[$2] += $1} END {printf "%d conv, %d elementwise", n["conv"], n["elementwise"]}')
grep -qE "^total +4 " "$WORK/stdout" && [ "$kinds" = "2 conv, 2 elementwise" ] && ok ||
  fail "expected 4 units (2 conv, 2 elementwise): $(cat "$WORK/stdout")"
expect_error "runtime Pow exponent" 2 "runtime_pow\.onnx.*runtime_pow.*exponent.*constant" -- \
  "$OPT" "$WORK/runtime_pow.onnx" -o "$WORK/bad.json"
finish
