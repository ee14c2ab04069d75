# Hostile inputs, fourth round (issue 53): the programs' half of what it
# found on half precision, memory limits and windows. The models are made
# here with ONNX's helpers. Refusals get exit 2 and one line naming the file,
# node, field or option; what was refused as doing nothing or wrongly now
# runs.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
M="$WORK/models"
mkdir -p "$M"

edit() {  # edit FILE OUT PYTHON: OUT is FILE's JSON with `d` changed by PYTHON
  $PY -c 'import json, sys; d = json.load(open(sys.argv[1])); exec(sys.argv[3]); json.dump(d, open(sys.argv[2], "w"))' "$@"
}

$PY - "$M" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
out = sys.argv[1]
rng = np.random.RandomState(0)

def save(name, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.save(m, f"{out}/{name}.onnx")
def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

def net(name, conv_name, scale):
    w = (rng.uniform(-1, 1, (4, 3, 3, 3)) * scale).astype(np.float32)
    save(name, [helper.make_node("Conv", ["input", "w"], ["c"], name=conv_name, pads=[1, 1, 1, 1]),
                helper.make_node("Relu", ["c"], ["r"], name="relu"),
                helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
                helper.make_node("Softmax", ["f"], ["output"], name="softmax", axis=1)],
         [vi("input", [1, 3, 4, 4])], [vi("output", [1, 64])], [numpy_helper.from_array(w, "w")])
net("small", "conv", 0.5)
# A node whose name holds a comma, with weights beyond float16's range: the
# message advises a --keep-fp32 that names it (its output is the graph's,
# float32 once kept).
save("comma_name", [helper.make_node("Conv", ["input", "w"], ["output"], name="conv,big", pads=[1, 1, 1, 1])],
     [vi("input", [1, 3, 4, 4])], [vi("output", [1, 4, 4, 4])],
     [numpy_helper.from_array((rng.uniform(-1, 1, (4, 3, 3, 3)) * 1e5).astype(np.float32), "w")])

# Pools whose padding is as large as the kernel: windows wholly in padding.
save("maxpool_pad_kernel", [helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                                             pads=[2, 0, 0, 0])],
     [vi("x", [1, 2, 4, 4])], [vi("y", [1, 2, 5, 3])])
save("avgpool_pad_kernel_1d", [helper.make_node("AveragePool", ["x"], ["y"], name="avg1d", kernel_shape=[3],
                                                pads=[0, 3])],
     [vi("x", [1, 2, 8])], [vi("y", [1, 2, 9])])
# The largest pads ONNX Runtime accepts: one less than the kernel.
save("maxpool_pad_below_kernel", [helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                                                   pads=[1, 1, 1, 1])],
     [vi("x", [1, 2, 4, 4])], [vi("y", [1, 2, 5, 5])])

# Float16 overflow inside an in-place element-wise chain (each constant fits
# float16, their product 80000 does not), and in convolutions and matrix
# products that an edited schedule merges (weights 30000: sums of 8 terms
# overflow).
save("inplace_chain", [helper.make_node("Mul", ["x", "k1"], ["m1"], name="mul1"),
                       helper.make_node("Mul", ["m1", "k2"], ["m2"], name="mul2"),
                       helper.make_node("Relu", ["m2"], ["y"], name="relu")],
     [vi("x", [1, 64])], [vi("y", [1, 64])],
     [numpy_helper.from_array(np.array(200, np.float32), "k1"),
      numpy_helper.from_array(np.array(400, np.float32), "k2")])
big = lambda *shape: np.full(shape, 30000, np.float32)
save("merge_convs", [helper.make_node("Conv", ["x", "w1"], ["y1"], name="conv1x1"),
                     helper.make_node("Conv", ["x", "w3"], ["y3"], name="conv3x3", pads=[1, 1, 1, 1])],
     [vi("x", [1, 8, 6, 6])], [vi("y1", [1, 8, 6, 6]), vi("y3", [1, 8, 6, 6])],
     [numpy_helper.from_array(big(8, 8, 1, 1), "w1"), numpy_helper.from_array(big(8, 8, 3, 3), "w3")])
save("merge_products", [helper.make_node("MatMul", ["x", "wa"], ["ya"], name="proj_a"),
                        helper.make_node("MatMul", ["x", "wb"], ["yb"], name="proj_b")],
     [vi("x", [1, 4, 8])], [vi("ya", [1, 4, 8]), vi("yb", [1, 4, 6])],
     [numpy_helper.from_array(big(8, 8), "wa"), numpy_helper.from_array(big(8, 6), "wb")])
np.save(f"{out}/ones_64.npy", np.ones((1, 64), np.float32))
np.save(f"{out}/ones_conv.npy", np.ones((1, 8, 6, 6), np.float32))
np.save(f"{out}/ones_products.npy", np.ones((1, 4, 8), np.float32))

# Typed models that break ONNX's type rules: a float16 Conv with a float32
# weight; a graph output declared float32 that the graph computes in float16.
w = rng.uniform(-1, 1, (4, 3, 3, 3))
save("conv_mixed_types", [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])],
     [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, 4, 4])],
     [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 4, 4, 4])],
     [numpy_helper.from_array(w.astype(np.float32), "w")])
save("output_mistyped", [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                         helper.make_node("Relu", ["c"], ["y"], name="relu")],
     [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, 4, 4])],
     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])],
     [numpy_helper.from_array(w.astype(np.float16), "w")])
save("typed_ok", [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["c"], ["y"], name="relu")],
     [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, 4, 4])],
     [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 4, 4, 4])],
     [numpy_helper.from_array(w.astype(np.float16), "w")])

# A LayerNormalization (kept float32 at fp16) feeding a GELU chain (fused,
# computed in float16): ios rounds the LayerNorm's output before the GELU.
f32 = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
save("layernorm_gelu", [
    helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], name="ln", axis=-1),
    helper.make_node("Div", ["ln", "sqrt2"], ["d"], name="gelu_div"),
    helper.make_node("Erf", ["d"], ["e"], name="gelu_erf"),
    helper.make_node("Add", ["e", "one"], ["a"], name="gelu_add"),
    helper.make_node("Mul", ["ln", "a"], ["m"], name="gelu_mul"),
    helper.make_node("Mul", ["m", "half"], ["y"], name="gelu_half")],
    [vi("x", [1, 8, 64])], [vi("y", [1, 8, 64])],
    [numpy_helper.from_array(rng.uniform(0.5, 3, 64).astype(np.float32), "gamma"),
     numpy_helper.from_array(rng.uniform(-1, 1, 64).astype(np.float32), "beta"),
     f32("sqrt2", np.sqrt(2.0)), f32("one", 1.0), f32("half", 0.5)], opset=17)
np.save(f"{out}/ln_input.npy", (rng.randn(1, 8, 64) * 3).astype(np.float32))

# Constant folding in 64 rounds (a Reshape's shape known only once the
# Shape before it is folded) in front of 50,000 Relu nodes that read its
# result, and the same Relu nodes without the rounds.
def relu_chain(name, rounds, n=50000):
    nodes, t = [], "x"
    for k in range(rounds):
        nodes.append(helper.make_node("Shape", [t], [f"s{k}"]))
        nodes.append(helper.make_node("Reshape", [t, f"s{k}"], [f"t{k}"]))
        t = f"t{k}"
    for k in range(n):
        nodes.append(helper.make_node("Relu", [t], [f"r{k}"]))
        t = f"r{k}"
    save(name, nodes, [vi("x", [1, 8])], [vi(t, [1, 8])])
relu_chain("fold_rounds", 64)
relu_chain("no_rounds", 0)
PYEOF

expect_ok "small model, fp16" -- "$OPT" "$M/small.onnx" --precision fp16 --cost simulated -o "$WORK/fp16.json"
expect_ok "small model, tf32" -- "$OPT" "$M/small.onnx" --cost simulated -o "$WORK/tf32.json"

# Item 8: an empty --write-onnx is refused as every other output option's is.
expect_error "--write-onnx ''" 2 "^ios-optimize: error: --write-onnx needs a file name, not an empty string" -- \
  limited "$OPT" "$M/small.onnx" --precision fp16 -o "$WORK/x.json" --write-onnx ""

# Item 9: a NUL byte and anything after it (nlohmann's parser stopped at the
# NUL); in a device profile too.
cp "$WORK/tf32.json" "$WORK/nul.json"
printf '\0{"garbage": [' >>"$WORK/nul.json"
size=$(($(stat -c %s "$WORK/tf32.json")))
expect_error "schedule with a NUL byte" 2 "^ios-run: error: .*nul.json: not valid JSON at byte $size \(a NUL byte" -- \
  limited "$RUN" "$M/small.onnx" "$WORK/nul.json" --dry-run
printf '{"name": "x"}\0 trailing' >"$WORK/nul_profile.json"
expect_error "device profile with a NUL byte" 2 "nul_profile.json: not valid JSON \(a NUL byte at byte 13\)" -- \
  limited "$OPT" "$M/small.onnx" --cost simulated --device-profile "$WORK/nul_profile.json" -o "$WORK/x.json"

# Item 10: --precision fp16 --retarget on an fp16 schedule does nothing.
expect_error "--precision fp16 --retarget on an fp16 schedule" 2 \
  "^ios-run: error: --retarget has no effect: .*fp16.json was made for precision fp16" -- \
  limited "$RUN" "$M/small.onnx" "$WORK/fp16.json" --backend cpu --precision fp16 --retarget --iterations 1
expect_ok "--precision bf16 --retarget on an fp16 schedule still runs" -- \
  limited "$RUN" "$M/small.onnx" "$WORK/fp16.json" --backend cpu --precision bf16 --retarget --iterations 1

# Item 15: an empty --keep-fp32 entry is refused as such, and takes no
# other argument as its value.
expect_error "--keep-fp32 ," 2 "^ios-optimize: error: --keep-fp32 ',': entry 1 is empty" -- \
  limited "$OPT" "$M/small.onnx" --precision fp16 --keep-fp32 , -o "$WORK/x.json"
expect_error "--keep-fp32 conv," 2 "^ios-optimize: error: --keep-fp32 'conv,': entry 2 is empty" -- \
  limited "$OPT" "$M/small.onnx" --precision fp16 --keep-fp32 conv, -o "$WORK/x.json"
expect_ok "--keep-fp32 repeated" -- limited "$OPT" "$M/small.onnx" --precision fp16 --keep-fp32 conv --keep-fp32 Relu,Flatten \
  -o "$WORK/keep.json"
[ "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["precision"]["keep_fp32"])' "$WORK/keep.json")" = \
  "['conv', 'Relu', 'Flatten']" ] && ok || fail "--keep-fp32 repeated: not every name recorded"

# Item 16: a name that names nothing is echoed bounded and escaped.
long=$(head -c 100000 /dev/zero | tr '\0' a)
expect_error "--keep-fp32 of 100 KB" 2 "--keep-fp32 'a+'\.\.\. \(100000 bytes\) names no node" -- \
  limited "$OPT" "$M/small.onnx" --precision fp16 --keep-fp32 "$long" -o "$WORK/x.json"
[ "$(wc -c <"$WORK/stderr")" -lt 600 ] && ok || fail "--keep-fp32 of 100 KB: a $(wc -c <"$WORK/stderr")-byte message"
expect_error "--keep-fp32 with escape sequences" 2 "--keep-fp32 '\\\\x1b\[31mred' names no node" -- \
  limited "$OPT" "$M/small.onnx" --precision fp16 --keep-fp32 $'\e[31mred' -o "$WORK/x.json"
if grep -q $'\e' "$WORK/stderr"; then fail "--keep-fp32: a raw ESC byte reached stderr"; else ok; fi

# Item 17: the advice names a node with a comma in a form --keep-fp32 reads.
expect_error "weights beyond float16 in 'conv,big'" 2 "keep the node in float32 \(--keep-fp32 'conv\\\\,big'\)" -- \
  limited "$OPT" "$M/comma_name.onnx" --precision fp16 -o "$WORK/x.json"
expect_ok "--keep-fp32 'conv\\,big' as advised" -- \
  limited "$OPT" "$M/comma_name.onnx" --precision fp16 --keep-fp32 'conv\,big' -o "$WORK/comma.json"
[ "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["precision"]["keep_fp32"])' "$WORK/comma.json")" = \
  "['conv,big']" ] && ok || fail "--keep-fp32 'conv\\,big': not recorded as the node's name"
expect_ok "the schedule that keeps 'conv,big' runs" -- \
  limited "$RUN" "$M/comma_name.onnx" "$WORK/comma.json" --backend cpu --iterations 1 --check
expect_error "--keep-fp32 with a lone backslash" 2 "a backslash at byte 4 escapes neither a comma nor a backslash" -- \
  limited "$OPT" "$M/comma_name.onnx" --precision fp16 --keep-fp32 'conv\big' -o "$WORK/x.json"

# Item 18: a bad name in the schedule's precision.keep_fp32 is the file's.
edit "$WORK/fp16.json" "$WORK/keep_bad.json" 'd["precision"]["keep_fp32"] = ["nothing"]'
expect_error "schedule keep_fp32 naming nothing" 2 \
  "^ios-run: error: .*small.onnx: .*keep_bad.json's precision.keep_fp32 entry 'nothing' names no node.*made for another model or edited" -- \
  limited "$RUN" "$M/small.onnx" "$WORK/keep_bad.json" --backend cpu --iterations 1
if grep -q -- "--keep-fp32" "$WORK/stderr"; then fail "schedule keep_fp32: blamed on --keep-fp32"; else ok; fi

# Item 19: a plus sign in --memory-limit.
expect_ok "--memory-limit +5MiB" -- limited "$OPT" "$M/small.onnx" --cost simulated --memory-limit +5MiB -o "$WORK/x.json"
rm -f "$WORK/x.json"

# Item 20: edited memory fields: 2^52 bytes of workspace is a byte count; an
# arena over the bound is named as arena_bytes.
edit "$WORK/tf32.json" "$WORK/ws.json" 'm = d["memory"]; m["workspace_bytes"] = [2**52]
m["peak_bytes"] = m["arena_bytes"] + m["weights_bytes"] + 2**52'
expect_ok "workspace_bytes [2^52]" -- limited "$RUN" "$M/small.onnx" "$WORK/ws.json" --dry-run
edit "$WORK/tf32.json" "$WORK/arena.json" 'm = d["memory"]; m["arena_bytes"] = 2**62
m["peak_bytes"] = 2**62 + m["weights_bytes"] + sum(m["workspace_bytes"])'
expect_error "arena_bytes 2^62" 2 "arena.json: field 'memory.arena_bytes' must be a byte count \(an integer from 0 to 2\^61\), got 4611686018427387904" -- \
  limited "$RUN" "$M/small.onnx" "$WORK/arena.json" --dry-run
edit "$WORK/tf32.json" "$WORK/ws_sum.json" 'm = d["memory"]; m["workspace_bytes"] = [2**60] * 3'
expect_error "workspaces summing past 2^61" 2 "ws_sum.json: field 'memory.workspace_bytes' must be byte counts whose sum is at most 2\^61" -- \
  limited "$RUN" "$M/small.onnx" "$WORK/ws_sum.json" --dry-run

# Item 21: pools whose padding is as large as the kernel.
expect_error "MaxPool pad = kernel" 2 "node 'pool' .*pads\[0\] = 2 is not smaller than kernel_shape\[0\] = 2" -- \
  limited "$OPT" "$M/maxpool_pad_kernel.onnx" --cost simulated -o "$WORK/x.json"
expect_error "AveragePool pad > kernel (1-D)" 2 "node 'avg1d' .*pads\[1\] = 3 is not smaller than kernel_shape\[0\] = 3" -- \
  limited "$OPT" "$M/avgpool_pad_kernel_1d.onnx" --cost simulated -o "$WORK/x.json"
expect_ok "MaxPool pad = kernel - 1" -- limited "$OPT" "$M/maxpool_pad_below_kernel.onnx" --cost simulated -o "$WORK/pool.json"
expect_ok "MaxPool pad = kernel - 1 runs" -- limited "$RUN" "$M/maxpool_pad_below_kernel.onnx" "$WORK/pool.json" \
  --backend cpu --iterations 1 --check
# Item 1: an overflow inside an in-place element-wise chain fails the run,
# with and without --check (the inputs' finiteness was read after the chain
# had overwritten them).
expect_ok "in-place chain, fp16" -- limited "$OPT" "$M/inplace_chain.onnx" --precision fp16 --cost simulated \
  -o "$WORK/chain.json"
for check in "" --check; do
  expect_error "overflow in an in-place chain ${check:-(no --check)}" 2 \
    "^ios-run: error: node '(mul2|relu)' \((Mul|Relu)\) wrote 64 of 64 values of '.*' as inf or NaN from finite inputs: they overflow float16" -- \
    limited "$RUN" "$M/inplace_chain.onnx" "$WORK/chain.json" --backend cpu --iterations 1 --input "$M/ones_64.npy" $check
done
expect_ok "the chain at bf16" -- limited "$OPT" "$M/inplace_chain.onnx" --precision bf16 --cost simulated -o "$WORK/chain.bf16.json"
expect_ok "the chain at bf16 runs" -- limited "$RUN" "$M/inplace_chain.onnx" "$WORK/chain.bf16.json" --backend cpu \
  --iterations 1 --input "$M/ones_64.npy" --check

# Item 2: an overflow in a merged convolution or matrix product fails the
# run as the sequential schedule's does, naming the member.
merge_schedule() {  # merge_schedule IN OUT A B: the stages of units A and B made one merge stage
  $PY - "$@" <<'PY2'
import json, sys
d = json.load(open(sys.argv[1]))
pair = sys.argv[3:5]
stages = []
for st in d["stages"]:
    units = [u for g in st["groups"] for u in g]
    if units == [pair[0]]:
        stages.append(dict(st, groups=[pair], strategy="merge"))
    elif units != [pair[1]]:
        stages.append(st)
assert len(stages) == len(d["stages"]) - 1, [st["groups"] for st in d["stages"]]
d["stages"] = stages
json.dump(d, open(sys.argv[2], "w"))
PY2
}
for case in convs:conv1x1:ones_conv:y1:y3 products:proj_a:ones_products:ya:yb; do
  IFS=: read -r name first input a b <<<"$case"
  expect_ok "merge_$name, fp16" -- limited "$OPT" "$M/merge_$name.onnx" --precision fp16 --scheduler sequential \
    --cost simulated -o "$WORK/seq_$name.json"
  merge_schedule "$WORK/seq_$name.json" "$WORK/merged_$name.json" "$a/half" "$b/half" && ok || fail "merge_$name: could not write the merge stage"
  expect_error "overflow in merge_$name, sequential" 2 "node '$first' .* as inf or NaN from finite inputs: they overflow float16" -- \
    limited "$RUN" "$M/merge_$name.onnx" "$WORK/seq_$name.json" --backend cpu --iterations 1 --input "$M/$input.npy"
  expect_error "overflow in merge_$name, merged" 2 "node '$first' .* as inf or NaN from finite inputs: they overflow float16" -- \
    limited "$RUN" "$M/merge_$name.onnx" "$WORK/merged_$name.json" --backend cpu --iterations 1 --input "$M/$input.npy"
done
expect_ok "merged products at bf16" -- limited "$OPT" "$M/merge_products.onnx" --precision bf16 --scheduler sequential \
  --cost simulated -o "$WORK/seq_bf16.json"
merge_schedule "$WORK/seq_bf16.json" "$WORK/merged_bf16.json" ya/half yb/half
expect_ok "merged products at bf16 run" -- limited "$RUN" "$M/merge_products.onnx" "$WORK/merged_bf16.json" --backend cpu \
  --iterations 1 --input "$M/ones_products.npy" --check

# Item 12: typed models that break ONNX's type rules.
expect_error "float16 Conv with a float32 weight" 2 \
  "conv_mixed_types.onnx: node 'conv' \(Conv\) reads the weight 'w' of type float32 beside a float16 input" -- \
  limited "$OPT" "$M/conv_mixed_types.onnx" --cost simulated -o "$WORK/x.json"
expect_error "output declared float32, computed float16" 2 \
  "output_mistyped.onnx: graph output 'y' is declared float32 but node 'relu' \(Relu\) computes it as float16" -- \
  limited "$OPT" "$M/output_mistyped.onnx" --cost simulated -o "$WORK/x.json"
expect_ok "a typed model within the rules" -- limited "$OPT" "$M/typed_ok.onnx" --cost simulated -o "$WORK/typed.json"
# Item 3: the --write-onnx file rounds the LayerNorm's output before the
# GELU as ios does. The file is evaluated here node by node with NumPy, in
# the types it declares (ONNX Runtime's CPU provider runs float16 Mul in
# float32 and drops Cast pairs, so it cannot show a rounding). Only erf's and
# the normalization's last float32 bits may differ from ios's, which moves a
# float16 rounding rarely: at most 4 of 512 values, by one unit (without
# the Casts: 176 values, by up to 11 units).
expect_ok "LayerNorm -> GELU, fp16 with --write-onnx" -- limited "$OPT" "$M/layernorm_gelu.onnx" --precision fp16 \
  --cost simulated -o "$WORK/lngelu.json" --write-onnx "$WORK/lngelu.fp16.onnx"
expect_ok "LayerNorm -> GELU runs" -- limited "$RUN" "$M/layernorm_gelu.onnx" "$WORK/lngelu.json" --backend cpu \
  --iterations 1 --input "$M/ln_input.npy" --output-dir "$WORK/lngelu_out"
cat >"$WORK/interpret.py" <<'PY3'
import sys, math
import numpy as np
import onnx
from onnx import numpy_helper, TensorProto
m = onnx.load(sys.argv[1])
env = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
env[m.graph.input[0].name] = np.load(sys.argv[2])
erf = np.vectorize(math.erf)
for n in m.graph.node:
    a = {x.name: x for x in n.attribute}
    i = [env[x] for x in n.input]
    if n.op_type == "LayerNormalization":
        x = i[0].astype(np.float64)
        mu = x.mean(-1, keepdims=True); var = ((x - mu) ** 2).mean(-1, keepdims=True)
        eps = a["epsilon"].f if "epsilon" in a else 1e-5
        y = ((x - mu) / np.sqrt(var + eps) * i[1] + i[2]).astype(i[0].dtype)
    elif n.op_type == "Cast":
        y = i[0].astype({TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16}[a["to"].i])
    elif n.op_type == "Erf":
        y = erf(i[0].astype(np.float64)).astype(i[0].dtype)
    elif n.op_type in ("Div", "Add", "Mul"):
        assert i[0].dtype == i[1].dtype, (n.op_type, i[0].dtype, i[1].dtype)
        y = {"Div": np.divide, "Add": np.add, "Mul": np.multiply}[n.op_type](i[0], i[1])
    else:
        sys.exit(f"no {n.op_type}")
    env[n.output[0]] = y
np.save(sys.argv[3], env[m.graph.output[0].name])
PY3
if $PY "$WORK/interpret.py" "$WORK/lngelu.fp16.onnx" "$M/ln_input.npy" "$WORK/lngelu_file.npy" 2>"$WORK/interp.err"; then
  $PY -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
ulp = np.spacing(np.abs(a).astype(np.float16)).astype(np.float64)
units = np.abs(a.astype(np.float64) - b.astype(np.float64)) / ulp
n = int((units > 0).sum())
print(f"ios vs the written file: {n} of {a.size} differ, by at most {units.max()} units")
sys.exit(0 if n <= 4 and units.max() <= 1 else 1)' "$WORK/lngelu_out/y.npy" "$WORK/lngelu_file.npy" >"$WORK/diff.txt" && ok ||
    fail "LayerNorm -> GELU: the written file computes otherwise than ios: $(cat "$WORK/diff.txt")"
else
  fail "the written LayerNorm -> GELU file could not be evaluated: $(tail -c 400 "$WORK/interp.err")"
fi

# Item 22: constant folding's rounds cost their own nodes, not the graph
# behind them: the 64-round model imports and schedules within 3x of the
# same graph without the rounds (the better of two runs of each).
seconds() {
  local best=1e9 t
  for _ in 1 2; do
    rm -f "$WORK/fold.json"
    /usr/bin/time -f %e -o "$WORK/time.txt" "$OPT" "$1" --cost simulated --scheduler sequential -o "$WORK/fold.json" \
      --quiet >/dev/null 2>&1 || { fail "$1 does not schedule"; echo 0; return; }
    t=$(tail -1 "$WORK/time.txt")
    best=$($PY -c "print(min($best, $t))")
  done
  echo "$best"
}
with=$(seconds "$M/fold_rounds.onnx")
without=$(seconds "$M/no_rounds.onnx")
echo "64 folding rounds: $with s, without: $without s"
$PY -c "import sys; sys.exit(0 if $with <= 3 * max($without, 0.2) else 1)" && ok ||
  fail "64 folding rounds in front of 50,000 nodes: $with s, against $without s without them (more than 3x)"
[ ! -e "$WORK/x.json" ] && ok || fail "a refused input left a schedule"
finish
