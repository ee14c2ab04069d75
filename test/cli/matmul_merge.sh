# Operator merge of matrix products: a self-attention block whose Q, K and V
# projections are three nn.Linear layers on one [N, S, D] input (PyTorch 1.13
# exports each as MatMul(x, W^T) + Add(bias)). The merge-only IOS scheduler
# must merge the three projections into one stage; ios-run --backend cpu of
# that schedule must match the sequential schedule (--check) and a float64
# PyTorch truth, and an edited schedule that merges illegal units is refused.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
$PY - "$WORK" <<'PY' || { fail "could not export the attention model"; finish; exit 1; }
import sys
import numpy as np
import torch

work = sys.argv[1]
torch.manual_seed(7)


class Attention(torch.nn.Module):
    def __init__(self, d, dv):
        super().__init__()
        self.q = torch.nn.Linear(d, d)
        self.k = torch.nn.Linear(d, d)
        self.v = torch.nn.Linear(d, dv)  # a different width: the slices differ in size
        self.scale = 1.0 / d ** 0.5

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        a = torch.softmax(torch.matmul(q, k.transpose(1, 2)) * self.scale, dim=-1)
        return torch.matmul(a, v)


model = Attention(16, 12).eval()
x = torch.rand(2, 5, 16) * 2 - 1
torch.onnx.export(model, (x,), f"{work}/attention.onnx", input_names=["x"], output_names=["y"],
                  opset_version=13, do_constant_folding=True)
np.save(f"{work}/x.npy", x.numpy())
with torch.no_grad():
    y = model.double()(x.double())
np.save(f"{work}/y.npy", y.numpy().astype(np.float32))
PY
model="$WORK/attention.onnx"
merged="$WORK/merged.json"
sequential="$WORK/sequential.json"
expect_ok "attention ios-merge" -- "$OPT" "$model" --scheduler ios-merge --cost simulated -o "$merged" --quiet
expect_ok "attention ios" -- "$OPT" "$model" --scheduler ios --cost simulated -o "$WORK/ios.json" --quiet
expect_ok "attention sequential" -- "$OPT" "$model" --scheduler sequential -o "$sequential" --quiet

# The merge-only schedule has one merge stage of the three projections: the
# units whose anchors are the MatMuls reading x (their ids are the Add outputs).
$PY - "$model" "$merged" <<'PY' && ok || fail "ios-merge did not merge the Q, K and V projections"
import json, sys
import onnx
m = onnx.load(sys.argv[1])
readers = [n for n in m.graph.node if n.op_type == "MatMul" and n.input[0] == "x"]
assert len(readers) == 3, f"expected 3 projections of x, found {len(readers)}"
bias_adds = {n.output[0] for n in m.graph.node
             if n.op_type == "Add" and any(i in n.input for r in readers for i in r.output)}
stages = json.load(open(sys.argv[2]))["stages"]
merges = [s["groups"][0] for s in stages if s["strategy"] == "merge"]
assert any(set(g) == bias_adds for g in merges), f"merge stages {merges}, projections {sorted(bias_adds)}"
PY

for name in merged ios; do
  expect_ok "attention $name cpu" -- "$RUN" "$model" "$WORK/$name.json" --backend cpu --input "x=$WORK/x.npy" \
    --check --reference "y=$WORK/y.npy" --rtol 1e-5 --atol 1e-6 --iterations 1 --warmup 0 \
    --output-dir "$WORK/out-$name" --quiet
done
expect_ok "attention sequential cpu" -- "$RUN" "$model" "$sequential" --backend cpu --input "x=$WORK/x.npy" \
  --iterations 1 --warmup 0 --output-dir "$WORK/out-sequential" --quiet
# The merged product sums each output in the same order as the separate
# ones: the merged schedule's output equals the sequential one's bit for bit.
$PY - "$WORK" <<'PY' && ok || fail "merged and sequential outputs differ"
import glob, sys
import numpy as np
work = sys.argv[1]
a = sorted(glob.glob(f"{work}/out-merged/**/*.npy", recursive=True))
b = sorted(glob.glob(f"{work}/out-sequential/**/*.npy", recursive=True))
assert a and len(a) == len(b), (a, b)
for x, y in zip(a, b):
    u, v = np.load(x), np.load(y)
    assert u.shape == v.shape and np.array_equal(u, v), f"{x}: max difference {np.abs(u - v).max()}"
PY

# A schedule that merges a projection with the attention product (which reads
# activations only) is refused with the reason, naming the unit.
$PY - "$merged" "$WORK/bad.json" <<'PY' || fail "could not write the illegal schedule"
import json, sys
s = json.load(open(sys.argv[1]))
stages = s["stages"]
m = next(i for i, st in enumerate(stages) if st["strategy"] == "merge")
unit = stages[m]["groups"][0].pop()
stages.insert(m + 1, {"strategy": "concurrent", "predicted_ms": 0.0, "groups": [[unit]]})
# the first unit after the merge that is not a projection: Q K^T
later = next(i for i in range(m + 2, len(stages)) if stages[i]["strategy"] == "concurrent")
stages[m]["groups"][0].append(stages[later]["groups"][0][0])
stages[later]["groups"][0].pop(0)
s["stages"] = [st for st in stages if st["groups"][0]]
json.dump(s, open(sys.argv[2], "w"))
PY
expect_error "illegal merge" 2 "cannot be merged: .*(weights .* not constant|reads? different tensors|not a MatMul)" -- \
  "$RUN" "$model" "$WORK/bad.json" --backend cpu --iterations 1 --warmup 0 --quiet
finish
