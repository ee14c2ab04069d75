# A YOLO-style detector block and a multi-resolution fusion written with
# ONNX's Python helpers, as exported by PyTorch before opset 18: LeakyReLU
# and Mish (x * tanh(softplus(x))) after convolutions, an SPP block of three
# parallel max pools, a per-channel PReLU, ELU branches fused by variadic
# Sum, Mean and Max. ios-optimize schedules it with every scheduler and
# ios-run --backend cpu matches a float64 numpy truth; the activations are
# fused into their convolutions' units; hostile forms exit 2 in one line.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
$PY - "$WORK" <<'PY' || { fail "could not write the activations model"; finish; exit 1; }
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

work = sys.argv[1]
rng = np.random.default_rng(11)
C = 4
x = rng.uniform(-1, 1, (1, C, 8, 8)).astype(np.float32)
weights = {}
def w(name, shape, scale=0.5):
    weights[name] = rng.uniform(-scale, scale, shape).astype(np.float32)
    return name
nodes = [
    helper.make_node("Conv", ["x", w("w1", (C, C, 3, 3))], ["c1"], pads=[1, 1, 1, 1]),
    helper.make_node("LeakyRelu", ["c1"], ["l1"], alpha=0.1),
    helper.make_node("Conv", ["l1", w("w2", (C, C, 1, 1))], ["c2"]),
    helper.make_node("Softplus", ["c2"], ["sp"]),
    helper.make_node("Tanh", ["sp"], ["th"]),
    helper.make_node("Mul", ["c2", "th"], ["m"]),
    # SPP: three parallel pools of the Mish output, concatenated with it.
    helper.make_node("MaxPool", ["m"], ["p5"], kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
    helper.make_node("MaxPool", ["m"], ["p9"], kernel_shape=[9, 9], pads=[4, 4, 4, 4]),
    helper.make_node("MaxPool", ["m"], ["p13"], kernel_shape=[13, 13], pads=[6, 6, 6, 6]),
    helper.make_node("Concat", ["m", "p5", "p9", "p13"], ["spp"], axis=1),
    helper.make_node("Conv", ["spp", w("w3", (C, 4 * C, 1, 1))], ["c3"]),
    helper.make_node("PRelu", ["c3", w("slope", (C, 1, 1))], ["pr"]),
    # Multi-resolution branches: Elu, Selu and Softsign convolutions fused by Sum, Mean and Max.
    helper.make_node("Conv", ["pr", w("w4", (C, C, 3, 3))], ["c4"], pads=[1, 1, 1, 1]),
    helper.make_node("Elu", ["c4"], ["e4"], alpha=0.7),
    helper.make_node("Conv", ["pr", w("w5", (C, C, 1, 1))], ["c5"]),
    helper.make_node("Selu", ["c5"], ["e5"]),
    helper.make_node("Conv", ["pr", w("w6", (C, C, 1, 1))], ["c6"]),
    helper.make_node("Softsign", ["c6"], ["e6"]),
    helper.make_node("Sum", ["e4", "e5", "e6"], ["s"]),
    helper.make_node("Mean", ["e4", "e5", "e6"], ["a"]),
    helper.make_node("Max", ["s", "a", "pr"], ["y"]),
]
graph = helper.make_graph(
    nodes, "activations",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 8, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, 8, 8])],
    [numpy_helper.from_array(a, n) for n, a in weights.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, f"{work}/activations.onnx")
np.save(f"{work}/x.npy", x)

# float64 truth
W = {k: v.astype(np.float64) for k, v in weights.items()}
def conv(t, wt, pad):
    t = np.pad(t, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = wt.shape[2]
    h = t.shape[2] - k + 1
    out = np.zeros((t.shape[0], wt.shape[0], h, h))
    for i in range(k):
        for j in range(k):
            out += np.einsum("mc,nchw->nmhw", wt[:, :, i, j], t[:, :, i:i + h, j:j + h])
    return out
def maxpool(t, k):
    p = k // 2
    t = np.pad(t, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
    h = t.shape[2] - k + 1
    return np.max([t[:, :, i:i + h, j:j + h] for i in range(k) for j in range(k)], axis=0)
xd = x.astype(np.float64)
c1 = conv(xd, W["w1"], 1)
l1 = np.where(c1 < 0, np.float64(np.float32(0.1)) * c1, c1)
c2 = conv(l1, W["w2"], 0)
m = c2 * np.tanh(np.log1p(np.exp(c2)))
spp = np.concatenate([m, maxpool(m, 5), maxpool(m, 9), maxpool(m, 13)], axis=1)
c3 = conv(spp, W["w3"], 0)
pr = np.where(c3 < 0, c3 * W["slope"][None], c3)
c4 = conv(pr, W["w4"], 1)
e4 = np.where(c4 < 0, np.float64(np.float32(0.7)) * np.expm1(c4), c4)
c5 = conv(pr, W["w5"], 0)
alpha, gamma = np.float64(np.float32(1.67326319217681884765625)), np.float64(np.float32(1.05070102214813232421875))
e5 = gamma * np.where(c5 <= 0, alpha * np.expm1(c5), c5)
c6 = conv(pr, W["w6"], 0)
e6 = c6 / (1 + np.abs(c6))
s = e4 + e5 + e6
a = s / 3
np.save(f"{work}/y.npy", np.maximum(np.maximum(s, a), pr).astype(np.float32))

# Hostile variants.
def save_one(name, node, inits=(), shape=(1, C, 8, 8)):
    g = helper.make_graph([node], name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)],
                          [numpy_helper.from_array(v, k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, f"{work}/{name}.onnx")
save_one("bad_slope", helper.make_node("PRelu", ["x", "slope"], ["y"], name="bad_prelu"),
         [("slope", np.ones((C + 1, 1, 1), np.float32))])
save_one("bad_celu", helper.make_node("Celu", ["x"], ["y"], name="bad_celu", alpha=0.0))
save_one("bad_tile", helper.make_node("Tile", ["x", "r"], ["y"], name="bad_tile"),
         [("r", np.array([1, 1, 1 << 30, 1 << 30], np.int64))])
PY
model="$WORK/activations.onnx"
for scheduler in sequential greedy ios ios-parallel ios-merge dos lios nimble; do
  out="$WORK/activations.$scheduler.json"
  expect_ok "activations $scheduler" -- "$OPT" "$model" --scheduler "$scheduler" --cost simulated -o "$out" --quiet || continue
  expect_ok "activations $scheduler cpu" -- "$RUN" "$model" "$out" --backend cpu --input "x=$WORK/x.npy" \
    --reference "y=$WORK/y.npy" --rtol 1e-5 --atol 1e-5 --iterations 1 --warmup 0 --quiet
done
# Every activation joins its convolution's unit (Mish as one fused node):
# 14 units, 6 of them convolutions; the three pools of the SPP block and
# its concat are one block of width 3; the rest are the Sum, Mean and Max
# chains.
expect_ok "activations units" -- "$OPT" "$model" --analyze
grep -qE "^total +14 " "$WORK/stdout" && [ "$(grep -oE '[0-9]+ conv' "$WORK/stdout" | awk '{s += $1} END {print s}')" = 6 ] &&
  grep -qE "^ +[0-9]+ +4 +3 +1 concat, 3 pool" "$WORK/stdout" && ok ||
  fail "expected 14 units, 6 conv, an SPP block of width 3: $(cat "$WORK/stdout")"
expect_error "slope of the wrong length" 2 "'bad_prelu' \\(PRelu\\): the slope has shape 5x1x1" -- \
  "$OPT" "$WORK/bad_slope.onnx" -o "$WORK/bad.json"
expect_error "Celu alpha 0" 2 "'bad_celu' \\(Celu\\): alpha 0 is not a positive number" -- \
  "$OPT" "$WORK/bad_celu.onnx" -o "$WORK/bad.json"
expect_error "Tile overflowing" 2 "'bad_tile' \\(Tile\\): .*more than 2\\^34 elements" -- \
  "$OPT" "$WORK/bad_tile.onnx" -o "$WORK/bad.json"
finish
