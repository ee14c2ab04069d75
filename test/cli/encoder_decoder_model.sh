# A U-Net-style encoder-decoder written with ONNX's Python helpers, as
# PyTorch exports nn.ConvTranspose2d: two levels, up-sampling by transposed
# convolutions (kernel 2 stride 2, and kernel 3 stride 2 with padding 1 and
# output_padding 1), a skip connection through a Concat, and a second
# decoder head beside the first. ios-optimize schedules it with every
# scheduler and ios-run --backend cpu matches a float64 numpy truth; the
# transposed convolutions take their activations as epilogues.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
$PY - "$WORK" <<'PY' || { fail "could not write the encoder-decoder model"; finish; exit 1; }
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

work = sys.argv[1]
rng = np.random.default_rng(7)
x = rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
weights = {}
def w(name, shape, scale=0.4):
    weights[name] = rng.uniform(-scale, scale, shape).astype(np.float32)
    return name
nodes = [
    helper.make_node("Conv", ["x", w("w1", (8, 3, 3, 3)), w("b1", (8,))], ["c1"], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["e1"]),
    helper.make_node("MaxPool", ["e1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p1", w("w2", (16, 8, 3, 3))], ["c2"], pads=[1, 1, 1, 1]),
    helper.make_node("LeakyRelu", ["c2"], ["e2"], alpha=0.2),
    helper.make_node("ConvTranspose", ["e2", w("t1", (16, 8, 2, 2)), w("tb1", (8,))], ["u1"], strides=[2, 2]),
    helper.make_node("Relu", ["u1"], ["r1"]),
    helper.make_node("Concat", ["r1", "e1"], ["cat"], axis=1),
    helper.make_node("Conv", ["cat", w("w3", (8, 16, 3, 3))], ["d1"], pads=[1, 1, 1, 1]),
    helper.make_node("ConvTranspose", ["d1", w("t2", (8, 4, 3, 3))], ["u2"], strides=[2, 2], pads=[1, 1, 1, 1],
                     output_padding=[1, 1]),
    # A second head on the bottleneck, beside the decoder: grouped and dilated.
    helper.make_node("ConvTranspose", ["e2", w("t3", (16, 2, 3, 3))], ["h2"], group=2, dilations=[2, 2],
                     strides=[4, 4], pads=[1, 1, 1, 1], output_padding=[1, 1]),
    helper.make_node("Elu", ["h2"], ["h3"]),
]
graph = helper.make_graph(
    nodes, "unet",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
    [helper.make_tensor_value_info("u2", TensorProto.FLOAT, [1, 4, 16, 16]),
     helper.make_tensor_value_info("h3", TensorProto.FLOAT, [1, 4, 16, 16])],
    [numpy_helper.from_array(a, n) for n, a in weights.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, f"{work}/unet.onnx")
np.save(f"{work}/x.npy", x)

W = {k: v.astype(np.float64) for k, v in weights.items()}
def conv(t, wt, pad, b=None):
    t = np.pad(t, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = wt.shape[2]
    h = t.shape[2] - k + 1
    out = np.zeros((t.shape[0], wt.shape[0], h, h))
    for i in range(k):
        for j in range(k):
            out += np.einsum("mc,nchw->nmhw", wt[:, :, i, j], t[:, :, i:i + h, j:j + h])
    return out if b is None else out + b[None, :, None, None]
def conv_transpose(t, wt, s, p=0, op=0, d=1, group=1, b=None):
    n, cin, h, _ = t.shape
    cout_g, k = wt.shape[1], wt.shape[2]
    full = s * (h - 1) + (k - 1) * d + 1
    out = np.zeros((n, cout_g * group, full + op, full + op))
    cin_g = cin // group
    for g in range(group):
        tg = t[:, g * cin_g:(g + 1) * cin_g]
        for u in range(k):
            for v in range(k):
                out[:, g * cout_g:(g + 1) * cout_g, u * d:u * d + s * (h - 1) + 1:s, v * d:v * d + s * (h - 1) + 1:s] += \
                    np.einsum("nchw,cm->nmhw", tg, wt[g * cin_g:(g + 1) * cin_g, :, u, v])
    length = full + op - 2 * p
    out = out[:, :, p:p + length, p:p + length]
    return out if b is None else out + b[None, :, None, None]
xd = x.astype(np.float64)
e1 = np.maximum(conv(xd, W["w1"], 1, W["b1"]), 0)
p1 = e1.reshape(1, 8, 4, 2, 4, 2).max(axis=(3, 5))
c2 = conv(p1, W["w2"], 1)
e2 = np.where(c2 < 0, np.float64(np.float32(0.2)) * c2, c2)
r1 = np.maximum(conv_transpose(e2, W["t1"], 2, b=W["tb1"]), 0)
d1 = conv(np.concatenate([r1, e1], axis=1), W["w3"], 1)
u2 = conv_transpose(d1, W["t2"], 2, p=1, op=1)
h2 = conv_transpose(e2, W["t3"], 4, p=1, op=1, d=2, group=2)
np.save(f"{work}/u2.npy", u2.astype(np.float32))
np.save(f"{work}/h3.npy", np.where(h2 < 0, np.expm1(h2), h2).astype(np.float32))
PY
model="$WORK/unet.onnx"
for scheduler in sequential greedy ios ios-parallel ios-merge dos lios nimble; do
  out="$WORK/unet.$scheduler.json"
  expect_ok "unet $scheduler" -- "$OPT" "$model" --scheduler "$scheduler" --cost simulated -o "$out" --quiet || continue
  expect_ok "unet $scheduler cpu" -- "$RUN" "$model" "$out" --backend cpu --input "x=$WORK/x.npy" \
    --reference "u2=$WORK/u2.npy" --reference "h3=$WORK/h3.npy" --rtol 1e-5 --atol 1e-5 --iterations 1 --warmup 0 --quiet
done
# Three convolutions and three transposed convolutions are conv units (their
# Relu, LeakyRelu and Elu fused), beside the pool and the concat.
expect_ok "unet units" -- "$OPT" "$model" --analyze
grep -qE "^total +8 " "$WORK/stdout" && [ "$(grep -oE '[0-9]+ conv' "$WORK/stdout" | awk '{s += $1} END {print s}')" = 6 ] &&
  ok || fail "expected 8 units, 6 conv: $(cat "$WORK/stdout")"
finish
