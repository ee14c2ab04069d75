#!/usr/bin/env python3
"""Per-layer times: each convolution and matrix product of a network in
PyTorch, set beside the same unit's launch in ios.

    layers.py torch MODEL.onnx --precision tf32|fp16 --batch 1 --out layers.json [--timeout S]
    layers.py torch MODEL.onnx --cpu-smoke [--precision tf32|fp16|bf16|fp32]
    layers.py table layers.json ios-trace.json [--md] [--schedule LABEL,...]

The layers. Every schedule unit of the model that ios anchors on a
convolution or a matrix product with a weight (Conv, a depthwise Conv and
the pointwise Conv that forms a separable convolution with it, Gemm, MatMul
with a constant operand) is one layer, built with exactly the nodes ios puts
in that unit (docs/unit-formation.md): the bias and folded BatchNorm, the
element-wise epilogue (Relu, Clip/ReLU6, Sigmoid, HardSwish, a constant Add
or Mul, GELU, ...), a prologue ReLU and the input sums in front of it (IOS's
ReLU-SepConv, RandWire's sum of predecessors). The units are formed by a
port of lib/sched/unit_formation.cpp's rules, after the importer's own
rewrites that change them (Identity and Dropout dropped, constants folded,
BatchNorm folded into the Conv before it, a zero Pad folded into the Conv or
pool that reads it, GELU's and Mish's element-wise chains made one node).
A layer is named as ios names the unit: the ONNX output tensor of its last
node (the Relu after a Conv, the pointwise Conv of a separable pair), which
is also the name of the unit's launch in an ios-run trace.

A residual Add of two activations after a convolution is not in the layer:
ios does not fuse it (unit-formation rule 5 makes it an element-wise unit of
its own, with the Relu after it), so the PyTorch layer leaves it out as
well and the two sides time the same work.

The PyTorch side (`torch`): each layer as torch.nn.functional calls on
random weights and inputs of the ONNX file's shapes (shape inference,
onnx.shape_inference.infer_shapes, the symbolic batch set to --batch), in
the precision's type: tf32 (float32 with TF32 allowed in cuDNN and
cuBLAS, as ios-run's default), fp32, fp16 or bf16; 16-bit layers keep 4-D
activations and weights in channels-last, the tensor cores' layout and
ios's. torch.backends.cudnn.benchmark is on. Timing method: three calls on a
side stream (cuDNN's autotuning happens there), then --reps calls (default
10) captured in one CUDA graph; the graph is replayed --replays times
(default 30, at least 20) back to back, a CUDA event pair around each
replay; a replay's time divided by --reps is one sample, and the layer's
time is the median sample (the minimum is kept too). Repeating the layer
inside the graph spreads the graph's launch over ten calls; the inputs and
weights stay in L2 between repetitions, which a layer inside a whole network
does not always enjoy. --timeout S stops starting layers after S seconds
(those left are listed as not run); the JSON is rewritten every few layers,
so a kill keeps what was timed.

The output (--out): {"format": "ios-layers", "version": 1, "model",
"precision", "batch", "device", "method", "layers": [{"name", "op" (Conv,
SepConv, Gemm, MatMul), "nodes" (ONNX op types in order), "prologue",
"epilogue" (op types before / after the convolution or product),
"input_shapes", "weight_shapes", "output_shape", "dtype", "layout",
"conv" (kernel, stride, pads, dilation, group), "torch_median_ms",
"torch_min_ms", "samples"} or {..., "error"}], "not_layers": the other
units}. --cpu-smoke builds every layer and runs it once on the CPU (fp32;
bf16 for the 16-bit precisions, since PyTorch's CPU has no float16
convolution), checking its output shape against shape inference; no times.

The ios side (`table`): ios-run --trace writes a Chrome/Perfetto trace of
one iteration per schedule (lib/cuda/engine.cpp, Engine::trace): every
launch issued as plain launches with a CUDA event pair around it, named by
its unit id(s) (a merged launch: ids joined by '+'). The right source is the
trace of a sequential schedule: one stream, one unit per launch, so each span
is that unit alone. `table` uses the trace's processes (schedules) that run
on one stream (others' spans overlap; --schedule picks processes by label),
takes for each launch name the median span over those processes (list the
sequential schedule several times, NAME=FILE with different names, to get
several samples), and joins by name: layer, op, shape, ios ms, torch ms,
ratio (ios / torch). Summary: the fraction of convolutions (Conv, SepConv)
within 1.15x of PyTorch, how many layers are slower than 2x, the sums and
the worst layers. A trace's span includes the event pair and, when the GPU
waits for the host, the launch's host latency, so a layer of a few
microseconds reads slower in ios than it runs; CUDA-graph replays on the
PyTorch side have no such gap. The table flags those: a launch whose span
starts more than 2.5 us after the previous one ended on its stream (the
event pair alone leaves about 1.3 us) found the GPU idle, waiting for the
host, so its span may include the host's launch time.

    ios-run MODEL.onnx t1=SEQ.json t2=SEQ.json t3=SEQ.json --precision PREC \\
        --iterations 20 --warmup 10 --trace NAME-PREC-layers.json

The `table` half (and everything collect.py imports) is standard library
only; `torch` needs onnx, numpy and torch.
"""

import argparse
import json
import math
import os
import signal
import statistics
import sys
import time

FORMAT = "ios-layers"
WITHIN = 1.15  # "close to PyTorch"
SLOW = 2.0  # "much slower"
HOST_GAP_US = 2.5  # an idle GPU before a launch: more than the event pair's own ~1.3 us
CONV_OPS = ("Conv", "SepConv")


# ============================================================================ ios side (stdlib only)

def read_trace(path, schedules=None):
    """The launches of an ios-run --trace file: {"spans": {name: [ms, ...]},
    "processes": [{"pid", "label", "streams", "used"}], "backend", "device"}.
    Processes used: those whose label is in `schedules` when given, else
    those that ran on one stream (all of them when none did)."""
    with open(path) as f:
        doc = json.load(f)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    labels, streams, launches = {}, {}, {}
    for e in events:
        pid = e.get("pid")
        if e.get("ph") == "M" and e.get("name") == "process_name":
            labels[pid] = (e.get("args") or {}).get("name", str(pid))
        elif e.get("ph") == "X":
            streams.setdefault(pid, set()).add(e.get("tid", 0))
            launches.setdefault(pid, []).append(e)
    pids = sorted(set(labels) | set(launches), key=lambda p: (p is None, p))
    if schedules:
        # A label as ios-run gives it (NAME=FILE's NAME); the simulator adds
        # " (predicted by ...)" to it.
        def base(p):
            return labels.get(p, str(p)).split(" (", 1)[0]
        wanted = set(schedules)
        used = [p for p in pids if base(p) in wanted or labels.get(p, str(p)) in wanted]
        missing = wanted - {base(p) for p in pids} - {labels.get(p, str(p)) for p in pids}
        if missing:
            raise ValueError(f"{path}: no schedule labelled {', '.join(sorted(missing))} "
                             f"(labels: {', '.join(labels.get(p, str(p)) for p in pids)})")
    else:
        used = [p for p in pids if len(streams.get(p, ())) == 1] or list(pids)
    spans, gaps = {}, {}
    for p in used:
        last_end = {}  # stream -> end of its previous launch (us)
        for e in sorted(launches.get(p, []), key=lambda e: float(e.get("ts", 0.0))):
            name, tid = e.get("name", ""), e.get("tid", 0)
            ts, dur = float(e.get("ts", 0.0)), float(e.get("dur", 0.0))
            spans.setdefault(name, []).append(dur / 1000.0)
            if tid in last_end:
                gaps.setdefault(name, []).append(ts - last_end[tid])
            last_end[tid] = ts + dur
    other = doc.get("otherData", {}) if isinstance(doc, dict) else {}
    return {"spans": spans, "gaps_us": gaps, "backend": other.get("backend"), "device": other.get("device"),
            "source": other.get("source"),
            "processes": [{"pid": p, "label": labels.get(p, str(p)), "streams": len(streams.get(p, ())),
                           "used": p in used} for p in pids]}


def shape_text(layer):
    shapes = layer.get("input_shapes") or []
    w = layer.get("weight_shapes") or []
    text = "x".join(str(d) for d in shapes[0]) if shapes else "?"
    if w:
        text += " * " + "x".join(str(d) for d in w[-1])
    return text


def join(layers_doc, trace):
    """The table: one row per layer of layers_doc (layers.py torch), with
    ios's time of the launch of the same name in `trace` (read_trace)."""
    spans = trace["spans"]
    merged = {}
    for name in spans:
        if "+" in name:
            for part in name.split("+"):
                merged.setdefault(part, name)
    rows = []
    for layer in layers_doc.get("layers", []):
        name = layer["name"]
        row = {"name": name, "op": layer.get("op"), "shape": shape_text(layer),
               "epilogue": "+".join(layer.get("epilogue") or []), "torch_ms": layer.get("torch_median_ms"),
               "ios_ms": None, "ratio": None, "ios_samples": 0, "note": layer.get("error")}
        if name in spans:
            row["ios_ms"] = statistics.median(spans[name])
            row["ios_samples"] = len(spans[name])
            gap = trace.get("gaps_us", {}).get(name)
            row["ios_gap_us"] = statistics.median(gap) if gap else None
            if row["ios_gap_us"] is not None and row["ios_gap_us"] > HOST_GAP_US:
                row["note"] = (f"the GPU waited {row['ios_gap_us']:.1f} us for the host before this launch: "
                               "its span may include launch time")
        elif name in merged:
            row["note"] = f"merged in ios with others: {merged[name]}"
        elif row["note"] is None:
            row["note"] = "no ios launch of this name"
        if row["ios_ms"] is not None and row["torch_ms"]:
            row["ratio"] = row["ios_ms"] / row["torch_ms"]
        rows.append(row)
    return {"rows": rows, "summary": summarize(rows), "ios_backend": trace.get("backend"),
            "ios_source": trace.get("source"),
            "ios_processes": [p["label"] for p in trace.get("processes", []) if p["used"]]}


def summarize(rows):
    both = [r for r in rows if r["ratio"] is not None]
    convs = [r for r in both if r["op"] in CONV_OPS]
    within = [r for r in convs if r["ratio"] <= WITHIN]
    worst = sorted(both, key=lambda r: -r["ratio"])[:5]
    return {"layers": len(rows), "matched": len(both), "convolutions_matched": len(convs),
            "convolutions_within_1.15x": len(within),
            "fraction_convolutions_within_1.15x": len(within) / len(convs) if convs else None,
            "slower_than_2x": sum(1 for r in both if r["ratio"] > SLOW),
            "host_bound": sum(1 for r in both if (r.get("ios_gap_us") or 0) > HOST_GAP_US),
            "convolutions_slower_than_2x": sum(1 for r in convs if r["ratio"] > SLOW),
            "ios_sum_ms": sum(r["ios_ms"] for r in both), "torch_sum_ms": sum(r["torch_ms"] for r in both),
            "geomean_ratio": math.exp(sum(math.log(r["ratio"]) for r in both) / len(both)) if both else None,
            "worst": [{"name": r["name"], "op": r["op"], "shape": r["shape"], "ratio": r["ratio"],
                       "ios_ms": r["ios_ms"], "torch_ms": r["torch_ms"]} for r in worst]}


def fmt_ms(x):
    return f"{x:.4f}" if isinstance(x, (int, float)) else "—"


def summary_line(s):
    frac = s.get("fraction_convolutions_within_1.15x")
    return (f"{s['matched']} of {s['layers']} layers matched; convolutions within 1.15x of PyTorch: "
            f"{s['convolutions_within_1.15x']} of {s['convolutions_matched']}"
            + (f" ({100 * frac:.0f}%)" if frac is not None else "")
            + f"; slower than 2x: {s['slower_than_2x']}; sum ios {fmt_ms(s['ios_sum_ms'])} ms, "
              f"PyTorch {fmt_ms(s['torch_sum_ms'])} ms"
            + (f"; geometric mean ratio {s['geomean_ratio']:.2f}x" if s.get("geomean_ratio") else "")
            + (f"; {s['host_bound']} ios spans after an idle GPU (may include launch time)"
               if s.get("host_bound") else ""))


def markdown(table, title=None):
    lines = [f"## {title}", ""] if title else []
    lines += [summary_line(table["summary"]), "",
              "| layer | op | shape (input * weight) | epilogue | ios ms | PyTorch ms | ratio | note |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in table["rows"]:
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None else "—"
        lines.append(f"| {r['name']} | {r['op']} | {r['shape']} | {r['epilogue'] or '—'} | {fmt_ms(r['ios_ms'])} | "
                     f"{fmt_ms(r['torch_ms'])} | {ratio} | {r['note'] or ''} |")
    return "\n".join(lines) + "\n"


def cmd_table(args):
    with open(args.layers) as f:
        layers_doc = json.load(f)
    if layers_doc.get("format") != FORMAT:
        raise ValueError(f"{args.layers}: not a layers.py torch output (format {layers_doc.get('format')!r})")
    schedules = [s for s in (args.schedule or "").split(",") if s] or None
    table = join(layers_doc, read_trace(args.trace, schedules))
    table.update({"model": layers_doc.get("model"), "precision": layers_doc.get("precision"),
                  "batch": layers_doc.get("batch")})
    text = markdown(table, f"{layers_doc.get('model')} {layers_doc.get('precision')} batch "
                           f"{layers_doc.get('batch')}") if args.md else json.dumps(table, indent=1) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


# ============================================================================ the ONNX graph and ios's units

UNARY = {"Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Sqrt", "Reciprocal", "Erf", "Exp",
         "Gelu", "LeakyRelu", "Elu", "Selu", "Celu", "Softplus", "Softsign", "Mish", "ThresholdedRelu", "Neg",
         "Abs", "BatchNormalization", "Cast"}
BINARY = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu"}
CONV = {"Conv", "ConvTranspose"}
MATMUL = {"Gemm", "MatMul"}
POOL = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax",
        "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp", "Resize", "Upsample",
        "LayerNormalization"}
SOFTMAX = {"Softmax", "LogSoftmax"}
ALIASES = {"Identity", "Dropout"}
STATIC = {"Shape", "Size"}  # constant once shapes are static, as the importer folds them


class Node:
    def __init__(self, op, name, inputs, outputs, attrs):
        self.op, self.name, self.inputs, self.outputs, self.attrs = op, name, inputs, outputs, attrs
        self.extra_pads = None  # a folded Pad's [begins..., ends...] over the spatial axes
        self.folded_bias = False  # a BatchNorm folded in

    def acts(self, g):
        return [t for t in self.inputs if t and t not in g.const]

    def __repr__(self):
        return f"{self.op}({', '.join(self.inputs)}) -> {', '.join(self.outputs)}"


class Graph:
    """The ONNX graph as ios's importer leaves it (module doc), with static
    shapes: nodes in topological order, constants, shapes by tensor name."""

    def __init__(self, path, batch):
        import onnx
        from onnx import helper, numpy_helper, shape_inference
        model = onnx.load(path)
        params = set()
        inits = {i.name for i in model.graph.initializer}
        for vi in model.graph.input:
            for d in vi.type.tensor_type.shape.dim:
                if d.dim_param:
                    params.add(d.dim_param)
                    d.dim_value = batch
        for vi in model.graph.output:
            for d in vi.type.tensor_type.shape.dim:
                if d.dim_param in params:
                    d.dim_value = batch
        del model.graph.value_info[:]
        inferred = fold_shape_computations(model)
        inits = {i.name for i in model.graph.initializer}
        self.shapes, self.types = {}, {}
        for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
            t = vi.type.tensor_type
            self.types[vi.name] = t.elem_type
            if t.HasField("shape"):
                dims = [d.dim_value if d.HasField("dim_value") else (batch if d.dim_param in params else None)
                        for d in t.shape.dim]
                self.shapes[vi.name] = tuple(dims)
        self.values = {}
        for i in model.graph.initializer:
            self.shapes[i.name] = tuple(i.dims)
            self.types[i.name] = i.data_type
            if i.data_location != onnx.TensorProto.EXTERNAL and numpy_helper.to_array(i).size <= 4096:
                self.values[i.name] = numpy_helper.to_array(i)
        self.const = set(inits)
        self.inputs = [vi.name for vi in model.graph.input if vi.name not in inits]
        self.graph_outputs = [vi.name for vi in model.graph.output]
        alias = {}

        def real(t):
            while t in alias:
                t = alias[t]
            return t

        nodes = []
        for n in model.graph.node:
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            node = Node(n.op_type, n.name, [real(t) if t else "" for t in n.input], list(n.output), attrs)
            if n.op_type in ALIASES and node.inputs and node.inputs[0]:
                alias[n.output[0]] = node.inputs[0]
                continue
            if n.op_type == "Constant":
                out = n.output[0]
                self.const.add(out)
                v = attrs.get("value")
                if v is not None:
                    arr = numpy_helper.to_array(v)
                    self.shapes[out] = tuple(arr.shape)
                    if arr.size <= 4096:
                        self.values[out] = arr
                continue
            if n.op_type in STATIC or (node.inputs and all(t == "" or t in self.const for t in node.inputs)):
                self.const.update(n.output)  # folded by the importer (values not needed here)
                continue
            nodes.append(node)
        self.graph_outputs = [real(t) for t in self.graph_outputs]
        self.nodes = nodes
        self.index()
        self.fold_batchnorm()
        self.fold_pad()
        self.fuse_activation_chains()
        self.remove_dead()

    # -- bookkeeping
    def index(self):
        self.producer, self.consumers = {}, {}
        for n in self.nodes:
            for t in n.outputs:
                self.producer[t] = n
            for t in dict.fromkeys(n.inputs):
                if t and t not in self.const:
                    self.consumers.setdefault(t, []).append(n)

    def single_internal_use(self, t):
        return len(self.consumers.get(t, [])) == 1 and t not in self.graph_outputs

    def value(self, t):
        return self.values.get(t)

    def scalar(self, t):
        v = self.values.get(t)
        return float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None

    def remove(self, dead):
        dead = set(map(id, dead))
        self.nodes = [n for n in self.nodes if id(n) not in dead]
        self.index()

    # -- the importer's rewrites that change units
    def fold_batchnorm(self):
        dead = []
        for bn in self.nodes:
            if bn.op != "BatchNormalization" or not bn.inputs:
                continue
            t = bn.inputs[0]
            conv = self.producer.get(t)
            if (conv is None or conv.op != "Conv" or not self.single_internal_use(t)
                    or any(p not in self.const for p in bn.inputs[1:5]) or conv.inputs[1] not in self.const
                    or (len(conv.inputs) > 2 and conv.inputs[2] and conv.inputs[2] not in self.const)):
                continue
            conv.outputs = [bn.outputs[0]]  # the conv writes the BN's output
            conv.folded_bias = True
            dead.append(bn)
        if dead:
            self.remove(dead)

    def pad_spec(self, pad):
        """(begins, ends) over H and W, the value; None unless a foldable Pad."""
        mode = pad.attrs.get("mode", b"constant")
        if (mode.decode() if isinstance(mode, bytes) else mode) != "constant":
            return None
        pads = pad.attrs.get("pads")
        if pads is None and len(pad.inputs) > 1 and pad.inputs[1]:
            v = self.value(pad.inputs[1])
            pads = None if v is None else [int(x) for x in v.reshape(-1)]
        if len(pad.inputs) > 3 and pad.inputs[3]:
            return None  # opset 18 axes: not folded here
        value = pad.attrs.get("value", 0.0)
        if len(pad.inputs) > 2 and pad.inputs[2]:
            value = self.scalar(pad.inputs[2])
        rank = len(self.shapes.get(pad.inputs[0], ()) or ())
        if pads is None or value is None or rank != 4 or len(pads) != 8:
            return None
        begins, ends = pads[:4], pads[4:]
        if any(p < 0 for p in pads) or begins[:2] != [0, 0] or ends[:2] != [0, 0]:
            return None
        return begins[2:], ends[2:], float(value)

    def fold_pad(self):
        dead = []
        for pad in self.nodes:
            if pad.op != "Pad":
                continue
            spec = self.pad_spec(pad)
            out = pad.outputs[0]
            if spec is None or not self.single_internal_use(out):
                continue
            begins, ends, value = spec
            user = self.consumers[out][0]
            if user.inputs[0] != out or out in user.inputs[1:]:
                continue
            ok = False
            if all(p == 0 for p in begins + ends):
                ok = True
            elif user.op == "Conv" and value == 0.0:
                ok = True
            elif user.op == "AveragePool" and not user.attrs.get("ceil_mode", 0) and value == 0.0:
                ok = bool(user.attrs.get("count_include_pad", 0)) or not any(user.attrs.get("pads", []))
            elif user.op == "MaxPool" and not user.attrs.get("ceil_mode", 0):
                src = self.producer.get(pad.inputs[0])
                low = self.clip_bounds(src)[0] if src is not None and src.op == "Clip" else None
                nonneg = src is not None and (src.op in ("Relu", "Sigmoid", "HardSigmoid") or (
                    low is not None and low >= 0))
                kernel = user.attrs.get("kernel_shape", [])
                own = list(user.attrs.get("pads", [0] * 2 * len(kernel)))
                h = len(kernel)
                below = all(own[i] + begins[i] < kernel[i] and own[h + i] + ends[i] < kernel[i]
                            for i in range(h)) if h == 2 else False
                ok = below and (value <= -3.4e38 or (value == 0.0 and nonneg))
            if not ok:
                continue
            user.inputs[0] = pad.inputs[0]
            if user.op == "Conv" or user.op.endswith("Pool"):
                user.extra_pads = [a + b for a, b in zip(user.extra_pads or [0] * 4, begins + ends)]
            dead.append(pad)
        if dead:
            self.remove(dead)

    def clip_bounds(self, n):
        lo, hi = n.attrs.get("min"), n.attrs.get("max")
        if len(n.inputs) > 1 and n.inputs[1]:
            lo = self.scalar(n.inputs[1])
        if len(n.inputs) > 2 and n.inputs[2]:
            hi = self.scalar(n.inputs[2])
        return lo, hi

    def fuse_activation_chains(self):
        """GELU (erf form) and Mish chains as one node each (ios's fuse_gelu,
        fuse_mish)."""
        dead = []
        gone = set()

        def only_user(t, op=None):
            if not self.single_internal_use(t):
                return None
            u = self.consumers[t][0]
            return u if (op is None or u.op == op) and id(u) not in gone else None

        def other(n, t):
            rest = [i for i in n.inputs if i != t]
            return rest[0] if len(rest) == 1 else None

        def near(t, want):
            v = self.scalar(t) if t in self.const else None
            return v is not None and abs(v - want) <= 1e-3 * abs(want)

        for erf in list(self.nodes):
            if erf.op != "Erf" or id(erf) in gone:
                continue
            d = self.producer.get(erf.inputs[0])
            if d is None or not self.single_internal_use(erf.inputs[0]):
                continue
            if d.op == "Div" and near(d.inputs[1], math.sqrt(2.0)):
                x = d.inputs[0]
            elif d.op == "Mul" and (near(other(d, d.inputs[0]) or "", 1 / math.sqrt(2.0))
                                    or near(other(d, d.inputs[1]) or "", 1 / math.sqrt(2.0))):
                x = d.inputs[0] if d.inputs[0] not in self.const else d.inputs[1]
            else:
                continue
            add = only_user(erf.outputs[0], "Add")
            if add is None or not near(other(add, erf.outputs[0]) or "", 1.0):
                continue
            m = only_user(add.outputs[0], "Mul")
            if m is None:
                continue
            o = other(m, add.outputs[0])
            chain = [d, erf, add, m]
            if o == x:  # x * (1 + erf) then * 0.5
                last = only_user(m.outputs[0], "Mul")
                if last is None or not near(other(last, m.outputs[0]) or "", 0.5):
                    continue
                chain.append(last)
            elif o is not None and o in self.producer and self.producer[o].op == "Mul" and \
                    x in self.producer[o].inputs and near(other(self.producer[o], x) or "", 0.5) and \
                    self.single_internal_use(o):
                chain.insert(0, self.producer[o])  # (0.5 * x) * (1 + erf)
                last = m
            elif near(o or "", 0.5):  # (1 + erf) * 0.5, then * x
                last = only_user(m.outputs[0], "Mul")
                if last is None or other(last, m.outputs[0]) != x:
                    continue
                chain.append(last)
            else:
                continue
            gelu = Node("Gelu", last.name, [x], [last.outputs[0]], {"approximate": "none"})
            self.nodes.insert(self.nodes.index(last), gelu)
            for n in chain:
                gone.add(id(n))
            dead += chain
            self.index()
        for sp in list(self.nodes):
            if sp.op != "Softplus" or id(sp) in gone:
                continue
            x = sp.inputs[0]
            th = only_user(sp.outputs[0], "Tanh")
            if th is None:
                continue
            m = only_user(th.outputs[0], "Mul")
            if m is None or other(m, th.outputs[0]) != x:
                continue
            mish = Node("Mish", m.name, [x], [m.outputs[0]], {})
            self.nodes.insert(self.nodes.index(m), mish)
            for n in (sp, th, m):
                gone.add(id(n))
            dead += [sp, th, m]
            self.index()
        if dead:
            self.remove(dead)

    def remove_dead(self):
        while True:
            dead = [n for n in self.nodes
                    if not any(self.consumers.get(t) or t in self.graph_outputs for t in n.outputs)]
            if not dead:
                return
            self.remove(dead)


SMALL = 4096  # elements: shape tensors and the like, evaluated here


def fold_shape_computations(model):
    """Shape inference with the importer's constant folding: the small
    computations on constants and static shapes (Shape, Gather, Concat, ...
    feeding a Reshape) are evaluated with numpy and become initializers, and
    shapes are inferred again, until nothing changes. Returns the inferred
    model (and leaves `model` folded)."""
    import numpy as np
    from onnx import helper, numpy_helper, shape_inference
    try:
        np_type = helper.tensor_dtype_to_np_dtype
    except AttributeError:  # onnx < 1.13
        from onnx import mapping
        np_type = mapping.TENSOR_TYPE_TO_NP_TYPE.__getitem__

    def attr(n, name, default=None):
        for a in n.attribute:
            if a.name == name:
                return helper.get_attribute_value(a)
        return default

    def evaluate(n, vals, shapes):
        ins = [vals.get(t) if t else None for t in n.input]
        op = n.op_type
        if op == "Shape":
            s = shapes.get(n.input[0])
            if s is None or any(d is None for d in s):
                return None
            return [np.array(s[attr(n, "start", 0):attr(n, "end", None)], dtype=np.int64)]
        if op == "Size":
            s = shapes.get(n.input[0])
            return None if s is None or any(d is None for d in s) else [np.array(int(np.prod(s)), np.int64)]
        if op == "Constant":
            v = attr(n, "value")
            if v is not None:
                return [numpy_helper.to_array(v)]
            for k, f in (("value_int", np.int64), ("value_float", np.float32)):
                if attr(n, k) is not None:
                    return [np.array(attr(n, k), f)]
            for k, f in (("value_ints", np.int64), ("value_floats", np.float32)):
                if attr(n, k) is not None:
                    return [np.array(list(attr(n, k)), f)]
            return None
        if any(v is None for t, v in zip(n.input, ins) if t):
            return None
        x = ins[0] if ins else None
        if op in ("Identity", "Cast"):
            return [x if op == "Identity" else x.astype(np_type(attr(n, "to")))]
        if op == "Gather":
            return [np.take(x, ins[1], axis=attr(n, "axis", 0))]
        if op in ("Unsqueeze", "Squeeze"):
            axes = attr(n, "axes")
            if axes is None and len(ins) > 1 and ins[1] is not None:
                axes = [int(a) for a in ins[1].reshape(-1)]
            if op == "Squeeze":
                return [np.squeeze(x, axis=tuple(axes) if axes is not None else None)]
            out = x
            for a in sorted(a % (x.ndim + len(axes)) for a in axes):
                out = np.expand_dims(out, a)
            return [out]
        if op == "Concat":
            return [np.concatenate([v.reshape(-1) if v.ndim == 0 else v for v in ins], axis=attr(n, "axis", 0))]
        if op == "Slice":
            if len(ins) >= 3:
                starts, ends = ins[1], ins[2]
                axes = ins[3] if len(ins) > 3 and ins[3] is not None else range(len(starts))
                steps = ins[4] if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
            else:
                starts, ends = attr(n, "starts"), attr(n, "ends")
                axes, steps = attr(n, "axes", range(len(starts))), [1] * len(starts)
            index = [slice(None)] * x.ndim
            for s, e, a, st in zip(starts, ends, axes, steps):
                index[int(a)] = slice(int(s), int(e), int(st))
            return [x[tuple(index)]]
        binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Equal": np.equal,
                  "Max": np.maximum, "Min": np.minimum}
        if op in binary:
            return [binary[op](x, ins[1]).astype(np.result_type(x, ins[1]) if op != "Equal" else bool)]
        if op == "Div":
            return [(x // ins[1]) if x.dtype.kind in "iu" else x / ins[1]]
        if op == "Where":
            return [np.where(x, ins[1], ins[2])]
        if op == "ConstantOfShape":
            v = attr(n, "value")
            fill = numpy_helper.to_array(v).reshape(-1)[0] if v is not None else np.float32(0)
            if int(np.prod(x)) > SMALL:
                return None
            return [np.full([int(d) for d in x], fill)]
        if op == "Range":
            return [np.arange(x, ins[1], ins[2])]
        if op == "Reshape":
            shape = [int(d) for d in ins[1]]
            shape = [x.shape[i] if d == 0 and not attr(n, "allowzero", 0) else d for i, d in enumerate(shape)]
            return [x.reshape(shape)]
        return None

    for _ in range(8):
        inferred = shape_inference.infer_shapes(model, data_prop=True)
        shapes = {}
        for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
            t = vi.type.tensor_type
            if t.HasField("shape"):
                shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
        vals = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer
                if int(np.prod(i.dims)) <= SMALL and i.data_location != 1}
        outputs = {o.name for o in model.graph.output}
        keep, folded = [], []
        for n in model.graph.node:
            try:
                got = None if outputs & set(n.output) else evaluate(n, vals, shapes)
            except Exception:
                got = None
            if got is not None and len(got) == len(n.output) and all(np.asarray(v).size <= SMALL for v in got):
                for name, v in zip(n.output, got):
                    vals[name] = np.asarray(v)
                    folded.append(numpy_helper.from_array(np.asarray(v), name))
            else:
                keep.append(n)
        if not folded:
            return inferred
        del model.graph.node[:]
        model.graph.node.extend(keep)
        model.graph.initializer.extend(folded)
        del model.graph.value_info[:]
    return shape_inference.infer_shapes(model, data_prop=True)


def is_unary(g, n):
    """ir::is_epilogue_candidate: a unary element-wise operator, or a binary
    one with exactly one activation operand (a Cast between types is not)."""
    if n.op == "Cast":  # joins unless it changes the element type
        return g.types.get(n.inputs[0]) == n.attrs.get("to")
    if n.op in UNARY:
        return True
    if n.op in BINARY:
        return len(n.acts(g)) == 1
    return False


def is_binary(g, n):
    return n.op in BINARY and not is_unary(g, n)


def anchor_kind(op):
    if op in CONV:
        return "conv"
    if op in MATMUL:
        return "matmul"
    if op in POOL:
        return "pool"
    if op in SOFTMAX:
        return "softmax"
    if op == "Concat":
        return "concat"
    if op in UNARY or op in BINARY:
        return "elementwise"
    return "layout"


ACCEPTS_EPILOGUE = {"conv", "sepconv", "pool", "matmul", "elementwise"}


def conv_kernel(g, n):
    k = n.attrs.get("kernel_shape")
    if k:
        return list(k)
    w = g.shapes.get(n.inputs[1]) or ()
    return list(w[2:])


def conv_pads(g, n):
    """[begins..., ends...] over the spatial axes, auto_pad resolved, a
    folded Pad added."""
    k = conv_kernel(g, n)
    r = len(k)
    auto = n.attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    stride = list(n.attrs.get("strides", [1] * r))
    dil = list(n.attrs.get("dilations", [1] * r))
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        x = g.shapes.get(n.inputs[0]) or ()
        pads = [0] * (2 * r)
        for i in range(r):
            size = x[2 + i]
            out = -(-size // stride[i])
            total = max(0, (out - 1) * stride[i] + (k[i] - 1) * dil[i] + 1 - size)
            small, big = total // 2, total - total // 2
            pads[i], pads[r + i] = (small, big) if auto == "SAME_UPPER" else (big, small)
    elif auto == "VALID":
        pads = [0] * (2 * r)
    else:
        pads = list(n.attrs.get("pads", [0] * (2 * r)))
    if n.extra_pads and r == 2:
        pads = [a + b for a, b in zip(pads, n.extra_pads)]
    return pads


def is_depthwise(g, n):
    if n.op != "Conv":
        return False
    group = n.attrs.get("group", 1)
    x = g.shapes.get(n.inputs[0]) or ()
    return group > 1 and len(x) >= 3 and group == x[1]


def is_pointwise(g, n):
    if n.op != "Conv" or n.attrs.get("group", 1) != 1:
        return False
    k = conv_kernel(g, n)
    return (all(v == 1 for v in k) and all(v == 1 for v in n.attrs.get("strides", [1] * len(k)))
            and all(v == 0 for v in conv_pads(g, n)))


def form_units(g):
    """lib/sched/unit_formation.cpp's rules 1-5 (module doc): the units as
    {"id", "kind", "nodes" (in order), "anchor"}, in node order."""
    owner, kind_of, prologue = {}, {}, set()
    nid = {id(n): i for i, n in enumerate(g.nodes)}

    def own(n, kind):
        owner[id(n)] = n
        kind_of[id(n)] = kind

    def owner_of(n):
        return owner.get(id(n))

    def activation_input(n):
        a = n.acts(g)
        return a[0] if a else None

    def join_as_epilogue(n, into_elementwise):
        t = activation_input(n)
        p = g.producer.get(t) if t else None
        if p is None or owner_of(p) is None or not g.single_internal_use(t):
            return False
        k = kind_of[id(owner_of(p))]
        if k not in ACCEPTS_EPILOGUE:
            return False
        if (id(p) in prologue) if into_elementwise else k == "elementwise":
            return False
        owner[id(n)] = owner_of(p)
        return True

    def anchor(n):
        a, kind = n, anchor_kind(n.op)
        if is_pointwise(g, n):
            p = g.producer.get(n.inputs[0])
            if (p is not None and is_depthwise(g, p) and g.single_internal_use(n.inputs[0])
                    and owner_of(p) is p):
                a, kind = p, "sepconv"
        owner[id(n)] = a
        kind_of[id(a)] = kind

    def mark_prologue(n):
        out = n.outputs[0]
        if n.op == "Relu" and g.single_internal_use(out) and g.consumers[out][0].op == "Conv":
            prologue.add(id(n))

    for n in g.nodes:  # rules 1-3
        if is_binary(g, n):
            continue
        if not is_unary(g, n):
            anchor(n)
        elif not join_as_epilogue(n, False):
            mark_prologue(n)
    for n in reversed(g.nodes):  # rule 4
        if owner_of(n) is not None:
            continue
        out = n.outputs[0]
        is_sum = is_binary(g, n) and n.op == "Add"
        if not g.single_internal_use(out):
            if is_sum:
                own(n, "elementwise")
            continue
        consumer = g.consumers[out][0]
        if id(n) in prologue:
            owner[id(n)] = owner_of(consumer)
            continue
        if is_sum:
            unit = owner_of(consumer)
            feeds_conv = id(consumer) in prologue or (
                consumer.op == "Conv" and consumer.inputs[0] == out and unit is not None
                and kind_of[id(unit)] != "elementwise")
            if unit is not None and feeds_conv:
                owner[id(n)] = unit
                prologue.add(id(n))
            elif consumer.op == "Add" and unit is not None and kind_of.get(id(unit)) == "elementwise":
                owner[id(n)] = unit
            else:
                own(n, "elementwise")
    for n in g.nodes:  # rule 5
        if owner_of(n) is not None:
            continue
        if not is_unary(g, n) or not join_as_epilogue(n, True):
            own(n, "elementwise")
    members = {}
    for n in g.nodes:
        members.setdefault(id(owner_of(n)), (owner_of(n), []))[1].append(n)
    units = []
    for a, nodes in members.values():
        kind = kind_of[id(a)]
        anchor_node = a
        if kind == "sepconv":
            anchor_node = [n for n in nodes if n.op == "Conv"][-1]
        units.append({"id": nodes[-1].outputs[0], "kind": kind, "nodes": nodes, "anchor": anchor_node,
                      "first": min(nid[id(n)] for n in nodes)})
    units.sort(key=lambda u: u["first"])
    return units


def is_layer(g, unit):
    a = unit["anchor"]
    if unit["kind"] in ("conv", "sepconv"):
        return a.op == "Conv"
    if unit["kind"] == "matmul":
        if a.op == "Gemm":
            return len(a.inputs) > 1 and a.inputs[1] in g.const
        return any(t in g.const for t in a.inputs[:2])
    return False


def describe(g, unit):
    """The layer's JSON fields that need no torch."""
    nodes, a = unit["nodes"], unit["anchor"]
    convs = [n for n in nodes if n.op in CONV]
    first_compute = nodes.index(convs[0] if convs else a)
    last_compute = nodes.index(a)
    produced = {t for n in nodes for t in n.outputs}
    ins = list(dict.fromkeys(t for n in nodes for t in n.acts(g) if t not in produced))
    weights = [n.inputs[1] for n in (convs or [a]) if len(n.inputs) > 1 and n.inputs[1] in g.const]
    if a.op == "MatMul":
        weights = [t for t in a.inputs[:2] if t in g.const]
    op = {"sepconv": "SepConv"}.get(unit["kind"], a.op)
    d = {"name": unit["id"], "op": op, "nodes": [n.op for n in nodes],
         "prologue": [n.op for n in nodes[:first_compute]],
         "epilogue": (["bias"] if a.op in ("Conv", "Gemm") and (
             (len(a.inputs) > 2 and a.inputs[2]) or a.folded_bias) else [])
         + (["BatchNormalization(folded)"] if any(n.folded_bias for n in convs) else [])
         + [n.op for n in nodes[last_compute + 1:]],
         "input_shapes": [list(g.shapes.get(t) or ()) for t in ins],
         "weight_shapes": [list(g.shapes.get(t) or ()) for t in weights],
         "output_shape": list(g.shapes.get(unit["id"]) or ())}
    if convs:
        d["conv"] = [{"kernel": conv_kernel(g, c), "stride": list(c.attrs.get("strides", [1] * len(conv_kernel(g, c)))),
                      "pads": conv_pads(g, c), "dilation": list(c.attrs.get("dilations",
                                                                             [1] * len(conv_kernel(g, c)))),
                      "group": c.attrs.get("group", 1)} for c in convs]
    return d, ins


# ============================================================================ the PyTorch layers

def dtype_of(torch, precision):
    return {"tf32": torch.float32, "fp32": torch.float32, "fp16": torch.float16,
            "bf16": torch.bfloat16}[precision]


def set_precision(torch, precision):
    tf32 = precision != "fp32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True


def build_layer(torch, g, unit, inputs, dtype, device, channels_last, gen):
    """(fn, input tensors): the unit's nodes as torch calls on random
    weights; fn(*inputs) returns the unit's output."""
    F = torch.nn.functional
    fmt = torch.channels_last

    def rand(shape, scale=1.0):
        t = torch.randn(*[int(s) for s in shape], generator=gen) * scale
        t = t.to(device=device, dtype=dtype)
        return t.contiguous(memory_format=fmt) if channels_last and t.dim() == 4 else t

    def const(t):
        v = g.value(t)
        if v is not None:
            x = torch.tensor(v.astype("float32")).to(device=device, dtype=dtype)
            return x.contiguous(memory_format=fmt) if channels_last and x.dim() == 4 else x
        shape = g.shapes.get(t)
        if shape is None:
            raise ValueError(f"constant {t!r} has no known shape")
        return rand(shape, 0.1)

    steps = []  # (function of env)
    for n in unit["nodes"]:
        steps.append(compile_node(torch, F, g, n, rand, const))

    tensors = []
    for t in inputs:
        shape = g.shapes.get(t)
        if not shape or any(s is None for s in shape):
            raise ValueError(f"input {t!r} has no static shape ({shape})")
        tensors.append(rand(shape))
    out = unit["id"]

    def fn(*xs):
        env = dict(zip(inputs, xs))
        for step in steps:
            step(env)
        return env[out]

    return fn, tensors


def compile_node(torch, F, g, n, rand, const):
    op, ins, out = n.op, n.inputs, n.outputs[0]
    acts = [t for t in ins if t and t not in g.const]
    if op == "Conv":
        w_shape = g.shapes.get(ins[1])
        fan_in = max(1, math.prod(w_shape[1:]))
        w = rand(w_shape, 1.0 / math.sqrt(fan_in))
        b = rand([w_shape[0]], 0.1) if (len(ins) > 2 and ins[2]) or n.folded_bias else None
        r = len(w_shape) - 2
        stride = list(n.attrs.get("strides", [1] * r))
        dil = list(n.attrs.get("dilations", [1] * r))
        group = n.attrs.get("group", 1)
        pads = conv_pads(g, n)
        conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[r]
        if pads[:r] == pads[r:]:
            def step(env, x=ins[0]):
                env[out] = conv(env[x], w, b, stride, pads[:r], dil, group)
        else:
            flat = []
            for i in reversed(range(r)):  # F.pad: last axis first
                flat += [pads[i], pads[r + i]]

            def step(env, x=ins[0]):
                env[out] = conv(F.pad(env[x], flat), w, b, stride, 0, dil, group)
        return step
    if op == "Gemm":
        b_shape = g.shapes.get(ins[1])
        ta, tb = n.attrs.get("transA", 0), n.attrs.get("transB", 0)
        alpha, beta = n.attrs.get("alpha", 1.0), n.attrs.get("beta", 1.0)
        fan_in = b_shape[1] if tb else b_shape[0]
        w = rand(b_shape, 1.0 / math.sqrt(max(1, fan_in)))
        c = const(ins[2]) if len(ins) > 2 and ins[2] else None
        if not ta and tb and alpha == 1.0 and (c is None or (beta == 1.0 and c.dim() == 1)):
            def step(env, x=ins[0]):
                env[out] = F.linear(env[x], w, c)
        else:
            def step(env, x=ins[0]):
                a = env[x].t() if ta else env[x]
                y = alpha * (a @ (w.t() if tb else w))
                env[out] = y + beta * c if c is not None else y
        return step
    if op == "MatMul":
        if ins[1] in g.const:
            w_shape = g.shapes.get(ins[1])
            w = rand(w_shape, 1.0 / math.sqrt(max(1, w_shape[-2] if len(w_shape) > 1 else 1)))

            def step(env, x=ins[0]):
                env[out] = torch.matmul(env[x], w)
        else:
            w_shape = g.shapes.get(ins[0])
            w = rand(w_shape, 1.0 / math.sqrt(max(1, w_shape[-1])))

            def step(env, x=ins[1]):
                env[out] = torch.matmul(w, env[x])
        return step
    if op == "Gelu":
        approx = n.attrs.get("approximate", "none")
        approx = approx.decode() if isinstance(approx, bytes) else approx

        def step(env, x=ins[0]):
            env[out] = F.gelu(env[x], approximate=approx) if approx != "none" else F.gelu(env[x])
        return step
    if op == "Clip":
        lo, hi = g.clip_bounds(n)

        def step(env, x=ins[0]):
            env[out] = env[x] if lo is None and hi is None else torch.clamp(env[x], lo, hi)
        return step
    if op == "BatchNormalization":
        c = (g.shapes.get(ins[0]) or (0, 0))[1]
        rank = len(g.shapes.get(ins[0]) or ())
        view = [1, c] + [1] * max(rank - 2, 0)
        scale, shift = rand(view, 0.1) + 1, rand(view, 0.1)

        def step(env, x=ins[0]):
            env[out] = env[x] * scale + shift
        return step
    unary = {
        "Relu": F.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Sqrt": torch.sqrt,
        "Reciprocal": torch.reciprocal, "Erf": torch.erf, "Exp": torch.exp, "Neg": torch.neg, "Abs": torch.abs,
        "HardSwish": F.hardswish, "Softplus": F.softplus, "Softsign": F.softsign, "Mish": F.mish,
        "Selu": F.selu, "Cast": lambda x: x,
        "HardSigmoid": lambda x, a=n.attrs.get("alpha", 0.2), b=n.attrs.get("beta", 0.5): torch.clamp(
            x * a + b, 0, 1),
        "LeakyRelu": lambda x, a=n.attrs.get("alpha", 0.01): F.leaky_relu(x, a),
        "Elu": lambda x, a=n.attrs.get("alpha", 1.0): F.elu(x, a),
        "Celu": lambda x, a=n.attrs.get("alpha", 1.0): F.celu(x, a),
        "ThresholdedRelu": lambda x, a=n.attrs.get("alpha", 1.0): F.threshold(x, a, 0.0),
    }
    if op in unary:
        f = unary[op]

        def step(env, x=ins[0]):
            env[out] = f(env[x])
        return step
    binary = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div, "Pow": torch.pow,
              "Max": torch.maximum, "Min": torch.minimum,
              "PRelu": lambda x, s: torch.where(x >= 0, x, x * s)}
    if op in binary:
        f = binary[op]
        a, b = ins[0], ins[1]
        ca = const(a) if a in g.const else None
        cb = const(b) if b in g.const else None
        if op == "Pow" and cb is not None and cb.numel() == 1:
            e = float(cb.float().reshape(-1)[0])

            def step(env):
                env[out] = torch.pow(env[a], e)
            return step

        def step(env):
            env[out] = f(ca if ca is not None else env[a], cb if cb is not None else env[b])
        return step
    raise ValueError(f"{op} ({out}): not built by layers.py")


def time_layer(torch, fn, inputs, reps, replays):
    """Median and minimum ms per call (module doc: a CUDA graph of `reps`
    calls, replayed `replays` times, an event pair around each replay)."""
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(reps):
                y = fn(*inputs)
        graph.replay()
        torch.cuda.synchronize()
        begins = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
        for b, e in zip(begins, ends):
            b.record()
            graph.replay()
            e.record()
        torch.cuda.synchronize()
        samples = [b.elapsed_time(e) / reps for b, e in zip(begins, ends)]
        del graph, y
    return samples


class Stop(Exception):
    pass


def cmd_torch(args):
    import torch
    smoke = args.cpu_smoke
    device = "cpu" if smoke else "cuda"
    if not smoke and not torch.cuda.is_available():
        print("layers.py: no CUDA device: `torch` times layers on a GPU only (--cpu-smoke builds them on "
              "the CPU)", file=sys.stderr)
        return 3
    t_start = time.perf_counter()
    g = Graph(args.model, args.batch)
    units = form_units(g)
    precision = args.precision
    run_precision = precision
    if smoke and precision in ("fp16", "bf16"):
        run_precision = "bf16"  # PyTorch's CPU has no float16 convolution
    dtype = dtype_of(torch, run_precision)
    channels_last = precision in ("fp16", "bf16")
    set_precision(torch, precision)
    gen = torch.Generator().manual_seed(args.seed)
    doc = {"format": FORMAT, "version": 1, "model": os.path.basename(args.model), "precision": precision,
           "batch": args.batch, "smoke": smoke, "device": "cpu" if smoke else torch.cuda.get_device_name(),
           "torch": torch.__version__, "dtype": str(dtype).replace("torch.", ""),
           "layout": "channels_last" if channels_last else "contiguous",
           "method": None if smoke else (f"CUDA graph of {args.reps} calls, {args.replays} replays with an event "
                                         f"pair each; median of replay/{args.reps}; cudnn.benchmark"),
           "units": len(units), "layers": [],
           "not_layers": [{"name": u["id"], "kind": u["kind"], "nodes": [n.op for n in u["nodes"]]}
                          for u in units if not is_layer(g, u)]}
    only = set(args.only.split(",")) if args.only else None

    def write():
        if not args.out:
            return
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, args.out)

    def stop(signum, frame):
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)
    ok = True
    last_write = time.perf_counter()
    try:
        for unit in units:
            if not is_layer(g, unit) or (only and unit["id"] not in only):
                continue
            d, ins = describe(g, unit)
            d["dtype"] = doc["dtype"]
            d["layout"] = doc["layout"]
            doc["layers"].append(d)
            if args.timeout and time.perf_counter() - t_start > args.timeout:
                d["error"] = f"not run (time): --timeout {args.timeout:g} s"
                continue
            try:
                fn, xs = build_layer(torch, g, unit, ins, dtype, device, channels_last, gen)
                if smoke:
                    with torch.no_grad():
                        y = fn(*xs)
                    d["cpu_output_shape"] = list(y.shape)
                    if list(y.shape) != d["output_shape"]:
                        raise ValueError(f"output shape {list(y.shape)}, shape inference says {d['output_shape']}")
                    d["cpu_ok"] = True
                else:
                    samples = time_layer(torch, fn, xs, args.reps, args.replays)
                    d["torch_median_ms"] = statistics.median(samples)
                    d["torch_min_ms"] = min(samples)
                    d["samples"] = len(samples)
                    if list(fn(*xs).shape) != d["output_shape"]:
                        d["shape_note"] = "output shape differs from shape inference"
            except Exception as e:
                ok = False
                text = str(e).strip()
                d["error"] = f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:300]
            if time.perf_counter() - last_write > 2:
                write()
                last_write = time.perf_counter()
            if not smoke and len(doc["layers"]) % 20 == 0:
                torch.cuda.empty_cache()
    except Stop as e:
        doc["stopped"] = str(e)
        write()
        return 124
    doc["elapsed_s"] = time.perf_counter() - t_start
    write()
    n = len(doc["layers"])
    failed = [d for d in doc["layers"] if "error" in d and not d["error"].startswith("not run")]
    print(f"layers.py: {os.path.basename(args.model)} {precision} batch {args.batch}: {n} layers of "
          f"{len(units)} units, {len(failed)} failed ({doc['elapsed_s']:.1f} s)"
          + (f"; {args.out}" if args.out else ""))
    for d in failed[:10]:
        print(f"  {d['name']}: {d['error']}")
    if smoke:
        print("cpu smoke:", "ok" if ok and n else "FAILED")
        return 0 if ok and n else 1
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("torch", help="time every layer in PyTorch (GPU), or build them (--cpu-smoke)")
    t.add_argument("model", help="the ONNX file ios runs")
    t.add_argument("--precision", choices=["tf32", "fp32", "fp16", "bf16"], default="tf32")
    t.add_argument("--batch", type=int, default=1)
    t.add_argument("--out", help="JSON output")
    t.add_argument("--timeout", type=float, default=None, help="start no layer after this many seconds")
    t.add_argument("--reps", type=int, default=10, help="calls per CUDA graph (default: %(default)s)")
    t.add_argument("--replays", type=int, default=30, help="timed graph replays, at least 20 (default: %(default)s)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--only", help="comma-separated layer names: these only")
    t.add_argument("--cpu-smoke", action="store_true", help="build each layer and run it once on the CPU; no times")
    tb = sub.add_parser("table", help="join layers.json with an ios-run trace (standard library only)")
    tb.add_argument("layers", help="layers.py torch output")
    tb.add_argument("trace", help="ios-run --trace output (a sequential schedule's)")
    tb.add_argument("--md", action="store_true", help="Markdown instead of JSON")
    tb.add_argument("--schedule", help="comma-separated trace process labels to use (default: those on one stream)")
    tb.add_argument("--out", help="write here instead of standard output")
    args = ap.parse_args(argv)
    try:
        if args.command == "torch":
            if args.batch < 1 or args.reps < 1 or args.replays < 20:
                ap.error("--batch and --reps must be >= 1, --replays >= 20")
            return cmd_torch(args)
        return cmd_table(args)
    except (OSError, ValueError) as e:
        print(f"layers.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
