# Gather of an activation at one constant index, as PyTorch exports
# indexing: x[:, 0] (ViT's class token), x[:, :, -1] and x[:, [1]] on a
# [N, S, D] tensor; and a learned class token expanded to a symbolic batch and
# concatenated in front of the tokens (imported with --batch 2). ios-run
# --backend cpu matches PyTorch's float64 run on the same input. A Gather
# index out of range and several indices are one-line input
# errors naming the node. (Run-time indices cannot reach the Gather: an
# integer graph input, or the Cast that would make one, is refused first.)
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
$PY - "$WORK" <<'PY' >"$WORK/export.log" 2>&1 || { fail "could not export the Gather models: $(tail -c 600 "$WORK/export.log")"; finish; exit 1; }
import sys, warnings
import numpy as np
import torch
import onnx
from onnx import helper, numpy_helper, TensorProto

warnings.filterwarnings("ignore")
work = sys.argv[1]
torch.manual_seed(7)

class Indexing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        t = self.proj(x)
        return t[:, 0] * 2.0, t[:, :, -1] + 1.0, t[:, [1]]

class ClassToken(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cls = torch.nn.Parameter(torch.randn(1, 1, 8))
        self.proj = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        cls = self.cls.expand(x.shape[0], -1, -1)
        t = torch.cat([cls, self.proj(x)], dim=1)
        return self.head(t[:, 0] + t[:, -1])

x = torch.empty(2, 5, 8).uniform_(-2, 2)
np.save(f"{work}/x.npy", x.numpy())
for name, module, outputs, dynamic in (("indexing", Indexing(), ["first", "last", "second"], {}),
                                      ("class_token", ClassToken(), ["y"], {"x": {0: "n"}, "y": {0: "n"}})):
    module.eval()
    torch.onnx.export(module, x, f"{work}/{name}.onnx", opset_version=13, input_names=["x"],
                      output_names=outputs, dynamic_axes=dynamic)
    with torch.no_grad():
        ys = module.double()(x.double())
    for out, y in zip(outputs, ys if isinstance(ys, tuple) else (ys,)):
        np.save(f"{work}/{name}_{out}.npy", y.numpy())

# Gathers ios refuses, on x [2, 5, 8].
def gather(name, indices, out_shape, axis=1, extra_inputs=()):
    nodes = [helper.make_node("Gather", ["x", "i"], ["y"], name="pick", axis=axis)]
    inits = [numpy_helper.from_array(np.array(indices, dtype=np.int64), "i")] if indices is not None else []
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 8])] + list(extra_inputs)
    graph = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, f"{work}/{name}.onnx")
gather("out_of_range", 5, [2, 8])
gather("negative_out_of_range", [-6], [2, 1, 8])
gather("two_indices", [0, 1], [2, 2, 8])
PY
model="$WORK/indexing.onnx"
for scheduler in sequential greedy ios ios-parallel ios-merge dos lios nimble; do
  out="$WORK/indexing.$scheduler.json"
  expect_ok "indexing $scheduler" -- "$OPT" "$model" --scheduler "$scheduler" --cost simulated -o "$out" --quiet ||
    continue
  expect_ok "indexing $scheduler cpu" -- "$RUN" "$model" "$out" --backend cpu --input "x=$WORK/x.npy" \
    --reference "first=$WORK/indexing_first.npy" --reference "last=$WORK/indexing_last.npy" \
    --reference "second=$WORK/indexing_second.npy" --rtol 1e-5 --atol 1e-5 --iterations 1 --warmup 0 --quiet
done
model="$WORK/class_token.onnx"
for scheduler in sequential ios lios; do
  out="$WORK/class_token.$scheduler.json"
  expect_ok "class token $scheduler" -- "$OPT" "$model" --batch 2 --scheduler "$scheduler" --cost simulated \
    -o "$out" --quiet || continue
  expect_ok "class token $scheduler cpu" -- "$RUN" "$model" "$out" --backend cpu --input "x=$WORK/x.npy" \
    --reference "y=$WORK/class_token_y.npy" --rtol 1e-5 --atol 1e-5 --iterations 1 --warmup 0 --quiet
done
expect_error "gather index out of range" 2 "node 'pick' \(Gather\): Gather index 5 is out of range for axis 1 of length 5" -- \
  "$OPT" "$WORK/out_of_range.onnx" --cost simulated -o "$WORK/s.json"
expect_error "gather negative index out of range" 2 "node 'pick' \(Gather\): Gather index -6 is out of range" -- \
  "$OPT" "$WORK/negative_out_of_range.onnx" --cost simulated -o "$WORK/s.json"
expect_error "gather of two indices" 2 "node 'pick' \(Gather\): Gather with indices of shape \[2\] is not supported" -- \
  "$OPT" "$WORK/two_indices.onnx" --cost simulated -o "$WORK/s.json"
[ ! -e "$WORK/s.json" ] && ok || fail "a refused Gather model left a schedule"
finish
