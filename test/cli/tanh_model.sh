# A model with Tanh, written with ONNX's Python helpers: Tanh as the epilogue
# of a convolution and of a residual Add. ios-optimize schedules it for every
# scheduler and ios-run --backend cpu matches a float64 numpy truth.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
$PY - "$WORK" <<'PY' || { fail "could not write the Tanh model"; finish; exit 1; }
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

work = sys.argv[1]
rng = np.random.default_rng(5)
x = rng.uniform(-1, 1, (1, 4, 6, 6)).astype(np.float32)
w1 = rng.uniform(-0.5, 0.5, (8, 4, 3, 3)).astype(np.float32)
b1 = rng.uniform(-0.5, 0.5, (8,)).astype(np.float32)
w2 = rng.uniform(-0.5, 0.5, (8, 4, 1, 1)).astype(np.float32)
nodes = [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
    helper.make_node("Tanh", ["c1"], ["t1"]),
    helper.make_node("Conv", ["x", "w2"], ["c2"]),
    helper.make_node("Add", ["t1", "c2"], ["s"]),
    helper.make_node("Tanh", ["s"], ["y"]),
]
graph = helper.make_graph(
    nodes, "tanh",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])],
    [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"))])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, f"{work}/tanh.onnx")
np.save(f"{work}/x.npy", x)

# float64 truth
xd = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
c1 = np.zeros((1, 8, 6, 6))
for i in range(3):
    for j in range(3):
        c1 += np.einsum("mc,nchw->nmhw", w1[:, :, i, j].astype(np.float64), xd[:, :, i:i + 6, j:j + 6])
c1 += b1.astype(np.float64)[None, :, None, None]
c2 = np.einsum("mc,nchw->nmhw", w2[:, :, 0, 0].astype(np.float64), x.astype(np.float64))
np.save(f"{work}/y.npy", np.tanh(np.tanh(c1) + c2).astype(np.float32))
PY
model="$WORK/tanh.onnx"
for scheduler in sequential greedy ios lios nimble; do
  out="$WORK/tanh.$scheduler.json"
  expect_ok "tanh $scheduler" -- "$OPT" "$model" --scheduler "$scheduler" --cost simulated -o "$out" --quiet || continue
  expect_ok "tanh $scheduler cpu" -- "$RUN" "$model" "$out" --backend cpu --input "x=$WORK/x.npy" \
    --reference "y=$WORK/y.npy" --rtol 1e-5 --atol 1e-6 --iterations 1 --warmup 0 --quiet
done
# Both Tanh nodes are fused, into the convolution's unit and the Add's unit:
# five nodes make three units.
expect_ok "tanh units" -- "$OPT" "$model" --analyze
grep -qE "^total +3 " "$WORK/stdout" && grep -q "2 conv, 1 elementwise" "$WORK/stdout" && ok ||
  fail "expected 3 units (2 conv, 1 elementwise): $(cat "$WORK/stdout")"
finish
