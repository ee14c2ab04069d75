# ConvNeXt-V2's global response normalization and the reductions it needs:
#  - a ConvNeXt-V2 block written here with PyTorch (depthwise 7x7 conv,
#    channels-last LayerNorm, Linear 4x, GELU, GRN, Linear back, residual),
#    exported at opsets 13 and 17; GRN's torch.norm(x, p=2, dim=(1, 2)) is
#    one ReduceL2 node in the export (checked). ios-optimize schedules each
#    export with every scheduler and ios-run --backend cpu matches the same
#    module run in float64, as closely as PyTorch's own float32 run does;
#  - ReduceL2, ReduceL1, ReduceSumSquare and ReduceLogSumExp written with
#    ONNX's Python helpers over several axes sets, with and without keepdims
#    (ReduceLogSumExp also over values whose exp is beyond float32's range),
#    at opset 13 (axes an attribute) and in opset 18's form (axes an input,
#    IR 10): every scheduler, against numpy in float64.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3

$PY - "$WORK" <<'PY' >"$WORK/torch_ratio" 2>"$WORK/torch.log" || { fail "PyTorch export failed: $(tail -c 600 "$WORK/torch.log")"; finish; exit 1; }
import sys
import numpy as np
import onnx
import torch
from torch import nn

work = sys.argv[1]
torch.manual_seed(5)


class GRN(nn.Module):
    """ConvNeXt-V2's global response normalization over channels-last x."""

    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.empty(1, 1, 1, dim).uniform_(-0.5, 0.5))
        self.beta = nn.Parameter(torch.empty(1, 1, 1, dim).uniform_(-0.5, 0.5))

    def forward(self, x):
        gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.gamma * (x * nx) + self.beta + x


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.grn = GRN(4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x).permute(0, 2, 3, 1)
        x = self.pwconv2(self.grn(self.act(self.pwconv1(self.norm(x)))))
        return shortcut + x.permute(0, 3, 1, 2)


net = Block(32).eval()
with torch.no_grad():
    net.norm.weight.uniform_(0.5, 1.5)
    net.norm.bias.uniform_(-0.5, 0.5)
x = torch.randn(2, 32, 14, 14)
for opset in (13, 17):
    path = f"{work}/convnext_v2_{opset}.onnx"
    torch.onnx.export(net, x, path, opset_version=opset, input_names=["x"], output_names=["y"])
    ops = [n.op_type for n in onnx.load(path).graph.node]
    if "ReduceL2" not in ops:
        sys.exit(f"opset {opset}: the export has no ReduceL2 node: {sorted(set(ops))}")
np.save(f"{work}/convnext_v2.x.npy", x.numpy())
with torch.no_grad():
    y32 = net(x).double().numpy()
    truth = net.double()(x.double()).numpy()
np.save(f"{work}/convnext_v2.y.npy", truth.astype(np.float32))
# PyTorch's own float32 error against the float64 truth, in the bound that
# ios-run checks below (|y - e| <= atol + rtol * |e|): ios must do as well.
print(float(np.max(np.abs(y32 - truth) / (1e-5 + 1e-5 * np.abs(truth)))))
PY
torch_ratio=$(tail -n 1 "$WORK/torch_ratio")

# The reductions alone, written with ONNX's helpers.
$PY - "$WORK" <<'PY' || { fail "could not write the reduction models"; finish; exit 1; }
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

work = sys.argv[1]
rng = np.random.default_rng(23)
x = rng.uniform(-3, 3, (2, 3, 4, 5)).astype(np.float32)
np.save(f"{work}/r.x.npy", x)
big = np.float32(30.0)  # x * 30 up to 90: e^90 > float32's 3.4e38
# (operator, axes, keepdims, input, output)
cases = [("ReduceL2", [1, 2], 1, "x", "l2_hw"), ("ReduceL2", [-1], 0, "x", "l2_w"),
         ("ReduceL1", [1], 1, "x", "l1_c"), ("ReduceL1", [0, 3], 0, "x", "l1_nw"),
         ("ReduceSumSquare", [2, 3], 0, "x", "ss_hw"), ("ReduceSumSquare", [0, 1, 2, 3], 1, "x", "ss_all"),
         ("ReduceLogSumExp", [1], 0, "x", "lse_c"), ("ReduceLogSumExp", [-2, -1], 1, "xb", "lse_big")]
scale = helper.make_node("Mul", ["x", "big"], ["xb"], name="scale")
inits = [numpy_helper.from_array(np.array(big), "big")]


def out_shape(axes, keep):
    axes = [a % 4 for a in axes]
    return [1 if d in axes else n for d, n in enumerate(x.shape) if keep or d not in axes]


outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, out_shape(a, k)) for _, a, k, _, o in cases]
nodes13 = [scale] + [helper.make_node(op, [i], [o], axes=a, keepdims=k, name=o) for op, a, k, i, o in cases]
graph = helper.make_graph(nodes13, "reductions13", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          outputs, inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, f"{work}/reductions13.onnx")
# Opset 18: the axes as an input. Python's ONNX 1.12 checker stops at opset
# 17, so this one is saved unchecked.
nodes18 = [scale] + [helper.make_node(op, [i, o + "_axes"], [o], keepdims=k, name=o) for op, a, k, i, o in cases]
axes18 = [numpy_helper.from_array(np.array(a, np.int64), o + "_axes") for _, a, _, _, o in cases]
graph = helper.make_graph(nodes18, "reductions18", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          outputs, inits + axes18)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
model.ir_version = 10
onnx.save(model, f"{work}/reductions18.onnx")

xd = x.astype(np.float64)
values = {"x": xd, "xb": xd * float(big)}
for op, axes, keep, i, o in cases:
    v, ax = values[i], tuple(a % 4 for a in axes)
    if op == "ReduceL2":
        r = np.sqrt(np.sum(v * v, axis=ax, keepdims=keep))
    elif op == "ReduceL1":
        r = np.sum(np.abs(v), axis=ax, keepdims=keep)
    elif op == "ReduceSumSquare":
        r = np.sum(v * v, axis=ax, keepdims=keep)
    else:
        m = np.max(v, axis=ax, keepdims=True)
        r = m + np.log(np.sum(np.exp(v - m), axis=ax, keepdims=True))
        r = r if keep else np.squeeze(r, axis=ax)
    assert np.all(np.isfinite(r)), o
    np.save(f"{work}/r.{o}.npy", r.astype(np.float32))
print(" ".join(o for *_, o in cases), file=open(f"{work}/r.outputs", "w"))
PY

schedulers="sequential greedy ios lios nimble"
for opset in 13 17; do
  model="$WORK/convnext_v2_$opset.onnx"
  for scheduler in $schedulers; do
    out="$WORK/convnext_v2_$opset.$scheduler.json"
    expect_ok "ConvNeXt-V2 opset $opset $scheduler" -- "$OPT" "$model" --scheduler "$scheduler" --cost simulated \
      -o "$out" --quiet || continue
    expect_ok "ConvNeXt-V2 opset $opset $scheduler cpu" -- "$RUN" "$model" "$out" --backend cpu \
      --input "x=$WORK/convnext_v2.x.npy" --reference "y=$WORK/convnext_v2.y.npy" --rtol 1e-5 --atol 1e-5 \
      --iterations 1 --warmup 0 --quiet
  done
done
# The bound above is one PyTorch's float32 run meets too.
awk -v r="$torch_ratio" 'BEGIN { exit !(r != "" && r <= 1) }' && ok ||
  fail "PyTorch's float32 run is outside the bound ios is held to (ratio '$torch_ratio')"

refs=()
for o in $(cat "$WORK/r.outputs"); do refs+=(--reference "$o=$WORK/r.$o.npy"); done
for opset in 13 18; do
  model="$WORK/reductions$opset.onnx"
  for scheduler in $schedulers; do
    out="$WORK/reductions$opset.$scheduler.json"
    expect_ok "reductions opset $opset $scheduler" -- "$OPT" "$model" --scheduler "$scheduler" --cost simulated \
      -o "$out" --quiet || continue
    expect_ok "reductions opset $opset $scheduler cpu" -- "$RUN" "$model" "$out" --backend cpu \
      --input "x=$WORK/r.x.npy" "${refs[@]}" --rtol 1e-5 --atol 1e-5 --iterations 1 --warmup 0 --quiet
  done
done
finish
