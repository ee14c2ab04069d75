# Layer normalization, written with ONNX's Python helpers and exported by
# PyTorch:
#  - opset 13: PyTorch's decomposition (ReduceMean, Sub, Pow 2, ReduceMean,
#    Add eps, Sqrt, Div, Mul gamma, Add beta) after a Linear, over the last
#    axis and over the last two axes, then a layer-scale Mul: fused into two
#    LayerNormalization nodes at import;
#  - the same at opset 18 (IR 10, ReduceMean axes as an input): fused alike;
#  - the same decomposition whose mean is also a graph output: not fused, it
#    runs as the plain operators;
#  - opset 17: LayerNormalization over the last axis (its unused Mean and
#    InvStdDev outputs named) and over the last two axes with a broadcast
#    Scale and no B.
# ios-optimize schedules each with every scheduler and ios-run --backend cpu
# matches a float64 numpy truth. PyTorch's own exports (Linear + LayerNorm,
# and a ConvNeXt stem with two ConvNeXt blocks) at opsets 13 and 17 import
# with one LayerNormalization per nn.LayerNorm module, form as many schedule
# units at opset 13 as at opset 17, and match PyTorch's float64 run.
# stash_type 0, a Scale computed at run time, a Scale that does not broadcast
# to the normalized dims and a used Mean output are refused with exit 2 and
# one line naming the node.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
$PY - "$WORK" <<'PY' || { fail "could not write the layer normalization models"; finish; exit 1; }
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

work = sys.argv[1]
rng = np.random.default_rng(11)
x = rng.uniform(-1, 1, (2, 5, 16)).astype(np.float32)
w = rng.uniform(-0.5, 0.5, (16, 32)).astype(np.float32)
b = rng.uniform(-0.5, 0.5, (32,)).astype(np.float32)
gamma = rng.uniform(0.5, 1.5, (32,)).astype(np.float32)
beta = rng.uniform(-0.5, 0.5, (32,)).astype(np.float32)
gamma2 = rng.uniform(0.5, 1.5, (1, 32)).astype(np.float32)
layer_scale = rng.uniform(0.1, 0.2, (32,)).astype(np.float32)
np.save(f"{work}/x.npy", x)

def save(nodes, name, opset, outputs, inits):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 16])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 5, 1] if o in ("ln1_m", "r") else [2, 5, 32])
         for o in outputs],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, f"{work}/{name}.onnx")

def decomposed(prefix, x_name, out, axes, eps_name, affine):
    """PyTorch's opset-13 export of F.layer_norm (eps and the exponent are Constant nodes)."""
    nodes = [
        helper.make_node("ReduceMean", [x_name], [f"{prefix}_m"], axes=axes, name=f"{prefix}_mean"),
        helper.make_node("Sub", [x_name, f"{prefix}_m"], [f"{prefix}_d"], name=f"{prefix}_sub"),
        helper.make_node("Constant", [], [f"{prefix}_two"], value=numpy_helper.from_array(np.array(2.0, np.float32))),
        helper.make_node("Pow", [f"{prefix}_d", f"{prefix}_two"], [f"{prefix}_p"], name=f"{prefix}_pow"),
        helper.make_node("ReduceMean", [f"{prefix}_p"], [f"{prefix}_v"], axes=axes, name=f"{prefix}_var"),
        helper.make_node("Add", [f"{prefix}_v", eps_name], [f"{prefix}_ve"], name=f"{prefix}_add_eps"),
        helper.make_node("Sqrt", [f"{prefix}_ve"], [f"{prefix}_s"], name=f"{prefix}_sqrt"),
        helper.make_node("Div", [f"{prefix}_d", f"{prefix}_s"], [out if not affine else f"{prefix}_n"],
                         name=f"{prefix}_div"),
    ]
    if affine:
        g, bb = affine
        nodes += [helper.make_node("Mul", [f"{prefix}_n", g], [f"{prefix}_g"], name=f"{prefix}_mul"),
                  helper.make_node("Add", [f"{prefix}_g", bb], [out], name=f"{prefix}_add")]
    return nodes

linear = [helper.make_node("MatMul", ["x", "w"], ["mm"], name="linear"),
          helper.make_node("Add", ["mm", "b"], ["h"], name="linear_bias")]
inits = {"w": w, "b": b, "gamma": gamma, "beta": beta, "eps": np.array(1e-5, np.float32),
         "eps2": np.array(1e-3, np.float32), "layer_scale": layer_scale, "gamma2": gamma2}

# Opset 13: two decomposed layer norms (last axis with gamma/beta, last two
# axes without), then a layer-scale Mul.
nodes = linear + decomposed("ln1", "h", "y1", [-1], "eps", ("gamma", "beta"))
nodes += decomposed("ln2", "y1", "y2", [1, 2], "eps2", None)
nodes += [helper.make_node("Mul", ["y2", "layer_scale"], ["y"], name="layer_scale_mul")]
save(nodes, "decomposed13", 13, ["y"], inits)
# The same model in opset 18's form (IR 10, reduction axes as an input), which
# the importer reads as opset 13's before the fusion sees it. Python's ONNX
# 1.12 checker stops at opset 17, so this one is saved unchecked.
nodes18, axes_inits = [], []
for n in nodes:
    if n.op_type != "ReduceMean":
        nodes18.append(n)
        continue
    axes = np.array(helper.get_attribute_value(n.attribute[0]), np.int64)
    axes_inits.append(numpy_helper.from_array(axes, n.name + "_axes"))
    nodes18.append(helper.make_node("ReduceMean", [n.input[0], n.name + "_axes"], list(n.output),
                                    keepdims=1, name=n.name))
graph18 = helper.make_graph(
    nodes18, "decomposed18", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 32])],
    [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()] + axes_inits)
model18 = helper.make_model(graph18, opset_imports=[helper.make_opsetid("", 18)])
model18.ir_version = 10
onnx.save(model18, f"{work}/decomposed18.onnx")
# The same first pattern, its mean also a graph output: left as plain operators.
nodes = linear + decomposed("ln1", "h", "y", [-1], "eps", ("gamma", "beta"))
save(nodes, "unfused13", 13, ["y", "ln1_m"], inits)
# Opset 17: LayerNormalization (Mean and InvStdDev named but unused), then the
# layer scale, then LayerNormalization over the last two axes, Scale [1, 32].
nodes = linear + [
    helper.make_node("LayerNormalization", ["h", "gamma", "beta"], ["y1", "mean", "inv_std"], axis=-1,
                     epsilon=1e-5, name="ln1"),
    helper.make_node("LayerNormalization", ["y1", "gamma2"], ["y2"], axis=1, epsilon=1e-3, name="ln2"),
    helper.make_node("Mul", ["y2", "layer_scale"], ["y"], name="layer_scale_mul"),
]
save(nodes, "layernorm17", 17, ["y"], inits)

# float64 truths
def ln(v, axes, eps, g=1.0, bb=0.0):
    m = v.mean(axis=axes, keepdims=True)
    var = ((v - m) ** 2).mean(axis=axes, keepdims=True)
    return (v - m) / np.sqrt(var + eps) * g + bb
h = x.astype(np.float64) @ w.astype(np.float64) + b.astype(np.float64)
y1 = ln(h, (2,), float(np.float32(1e-5)), gamma.astype(np.float64), beta.astype(np.float64))
y = ln(y1, (1, 2), float(np.float32(1e-3)), 1.0) * layer_scale.astype(np.float64)
np.save(f"{work}/decomposed13.y.npy", y.astype(np.float32))
np.save(f"{work}/decomposed18.y.npy", y.astype(np.float32))
np.save(f"{work}/unfused13.y.npy", y1.astype(np.float32))
np.save(f"{work}/unfused13.ln1_m.npy", h.mean(axis=2, keepdims=True).astype(np.float32))
y17 = ln(y1, (1, 2), float(np.float32(1e-3)), gamma2.astype(np.float64)) * layer_scale.astype(np.float64)
np.save(f"{work}/layernorm17.y.npy", y17.astype(np.float32))

# Refused: stash_type 0, a Scale computed at run time, a used Mean output.
save(linear + [helper.make_node("LayerNormalization", ["h", "gamma"], ["y"], stash_type=0, name="ln_stash")],
     "bad_stash", 17, ["y"], inits)
save(linear + [helper.make_node("Relu", ["b"], ["rb"], name="relu_scale"),
               helper.make_node("LayerNormalization", ["h", "rb"], ["y"], name="ln_runtime_scale")],
     "bad_scale", 17, ["y"], inits)
save(linear + [helper.make_node("LayerNormalization", ["h", "w"], ["y"], name="ln_scale_shape")],
     "bad_scale_shape", 17, ["y"], inits)
save(linear + [helper.make_node("LayerNormalization", ["h", "gamma"], ["y", "ln_mean_out"], name="ln_mean_used"),
               helper.make_node("Relu", ["ln_mean_out"], ["r"], name="relu_mean")],
     "bad_mean", 17, ["y", "r"], inits)
PY

check_model() {  # NAME OUTPUTS...: every scheduler, then the CPU run against the truths
  local name=$1; shift
  local refs=()
  for o in "$@"; do refs+=(--reference "$o=$WORK/$name.$o.npy"); done
  for scheduler in sequential greedy ios lios nimble; do
    out="$WORK/$name.$scheduler.json"
    expect_ok "$name $scheduler" -- "$OPT" "$WORK/$name.onnx" --scheduler "$scheduler" --cost simulated -o "$out" \
      --quiet || continue
    expect_ok "$name $scheduler cpu" -- "$RUN" "$WORK/$name.onnx" "$out" --backend cpu --input "x=$WORK/x.npy" \
      "${refs[@]}" --rtol 1e-4 --atol 1e-5 --iterations 1 --warmup 0 --quiet
  done
}

# The number of LayerNormalization nodes ios imports from MODEL must be COUNT;
# the number of schedule units is left in $units.
units=none
expect_layer_norms() {
  local name=$1 model=$2 count=$3
  units=none
  expect_ok "$name import" -- "$OPT" "$model" --analyze -v || return
  local fused
  fused=$(grep -oE "[0-9]+ LayerNormalization nodes" "$WORK/stderr" | grep -oE "^[0-9]+" || echo missing)
  [ "$fused" = "$count" ] && ok || fail "$name: expected $count LayerNormalization nodes, the import log says '$fused'"
  units=$(grep -oE "^total +[0-9]+" "$WORK/stdout" | grep -oE "[0-9]+$" || echo missing)
}

check_model decomposed13 y
check_model decomposed18 y
check_model unfused13 y ln1_m
check_model layernorm17 y
expect_layer_norms "decomposed opset 13" "$WORK/decomposed13.onnx" 2
expect_layer_norms "decomposed opset 18" "$WORK/decomposed18.onnx" 2
expect_layer_norms "unfused opset 13" "$WORK/unfused13.onnx" 0
expect_layer_norms "opset 17" "$WORK/layernorm17.onnx" 2

expect_error "stash_type 0" 2 "bad_stash\.onnx: node 'ln_stash' \(LayerNormalization\): stash_type 0" -- \
  "$OPT" "$WORK/bad_stash.onnx" -o "$WORK/bad.json"
expect_error "run-time Scale" 2 "bad_scale\.onnx: node 'ln_runtime_scale' .*Scale.*computed at run time" -- \
  "$OPT" "$WORK/bad_scale.onnx" -o "$WORK/bad.json"
expect_error "Scale of another shape" 2 "bad_scale_shape\.onnx: node 'ln_scale_shape' .*Scale.*shape 16x32.*does not broadcast to the normalized dims 32" -- \
  "$OPT" "$WORK/bad_scale_shape.onnx" -o "$WORK/bad.json"
expect_error "used Mean output" 2 "bad_mean\.onnx: node 'ln_mean_used' .*output 1 \('ln_mean_out'\) is used" -- \
  "$OPT" "$WORK/bad_mean.onnx" -o "$WORK/bad.json"
[ ! -e "$WORK/bad.json" ] && ok || fail "a refused model left a schedule file"

# PyTorch's exports: Linear + LayerNorm, and a ConvNeXt stem (LayerNorm2d)
# with two ConvNeXt blocks; truths from the same modules in float64.
$PY - "$WORK" <<'PY' 2>"$WORK/torch.log" || { fail "PyTorch export failed: $(tail -c 600 "$WORK/torch.log")"; finish; exit 1; }
import sys
import numpy as np
import torch
from torch import nn
from torchvision.models.convnext import CNBlock, LayerNorm2d

work = sys.argv[1]
torch.manual_seed(3)
nets = {
    "linear": (nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32)), torch.randn(2, 5, 16)),
    "convnext": (nn.Sequential(nn.Conv2d(3, 32, 4, stride=4), LayerNorm2d(32), CNBlock(32, 0.5, 0.0),
                               CNBlock(32, 0.5, 0.0)), torch.randn(1, 3, 32, 32)),
}
for name, (net, x) in nets.items():
    net.eval()
    # Random affine parameters, so Scale and B matter.
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    for opset in (13, 17):
        torch.onnx.export(net, x, f"{work}/torch_{name}{opset}.onnx", opset_version=opset,
                          input_names=["x"], output_names=["y"])
    np.save(f"{work}/torch_{name}.x.npy", x.numpy())
    with torch.no_grad():
        np.save(f"{work}/torch_{name}.y.npy", net.double()(x.double()).numpy().astype(np.float32))
    with open(f"{work}/torch_{name}.count", "w") as f:
        f.write(str(sum(isinstance(m, nn.LayerNorm) for m in net.modules())))
PY
# Fused, the opset-13 decomposition forms the same schedule units as opset
# 17's LayerNormalization (the layer scale and residual Add included).
for name in linear convnext; do
  units13=none
  for opset in 13 17; do
    model="$WORK/torch_$name$opset.onnx"
    expect_layer_norms "PyTorch $name opset $opset" "$model" "$(cat "$WORK/torch_$name.count")"
    if [ "$opset" = 13 ]; then
      units13=$units
    else
      [ "$units" = "$units13" ] && [ "$units" != missing ] && ok ||
        fail "PyTorch $name: $units13 units at opset 13, $units at opset 17"
    fi
    expect_ok "PyTorch $name opset $opset schedule" -- "$OPT" "$model" --scheduler ios --cost simulated \
      -o "$WORK/torch.json" --quiet || continue
    expect_ok "PyTorch $name opset $opset cpu" -- "$RUN" "$model" "$WORK/torch.json" --backend cpu \
      --input "x=$WORK/torch_$name.x.npy" --reference "y=$WORK/torch_$name.y.npy" --rtol 1e-4 --atol 1e-4 \
      --iterations 1 --warmup 0 --quiet
  done
done
finish
