#!/usr/bin/python3
"""Convert a float32 ONNX model to float16 or bfloat16, the way
onnxconverter-common's float16.convert_float_to_float16 does (that package is
not installed here; this uses onnx 1.12 and numpy only):

    /usr/bin/python3 onnx_models/convert_half.py IN.onnx OUT.onnx --to fp16|bf16
        [--half-io] [--op-block-list Op,Op] [--node-block-list name,name]

What changes:

* Every float32 tensor that carries activations or weights becomes the half
  type: initializers and Constant / ConstantOfShape values are rounded
  (fp16: numpy's astype(float16), round to nearest even, overflow to inf;
  bf16: the float32 bits rounded to nearest even to their top 16 bits, NaN
  kept a NaN, stored as BFLOAT16 raw_data, little-endian uint16), node
  outputs are retyped, and a Cast to FLOAT already in the model becomes a
  Cast to the half type.
* Left float32: shape arithmetic (a float made by Cast from an integer
  tensor, and everything computed from such floats and constants only,
  e.g. Swin's head_dim ** -0.5; Shape / Gather / Concat on int64 is not
  float at all); operands an operator's schema fixes to float32 (Resize's
  `scales`); blocked nodes, which read and write float32; and initializers
  or constants read only by float32 consumers.
* Where a tensor's type and its consumer's differ a Cast is inserted (one
  per tensor and type): Cast to FLOAT before each blocked node's half
  inputs, Cast to the half type after its outputs when half nodes read them,
  Cast to the half type of a shape-arithmetic float that meets an
  activation (Mul(q, scale)).
* keep_io_types (the default): graph inputs and outputs stay float32, a Cast
  to the half type after each input and a Cast to FLOAT before each output;
  the graph output keeps its name (the tensor inside gets a `_half`
  suffix). --half-io makes the graph inputs and outputs half instead.
* Intermediate value_info is dropped (shape inference recomputes it); graph
  input and output types are set.  metadata_props gain ios.converted =
  fp16|bf16 (the other ios.* props are kept).

Op block list (nodes computed in float32, as mixed-precision practice does
for reductions and exponentials, where half precision loses the sum or
overflows): LayerNormalization, Softmax, LogSoftmax, ReduceMean, ReduceSum,
ReduceProd, Exp, Pow, BatchNormalization (one left unfolded after a concat,
DenseNet / NASNet), InstanceNormalization (FCOS's GroupNorm).  At opset 13
torch writes LayerNorm as ReduceMean / Sub / Pow / Add / Sqrt / Div: the
ReduceMeans and the Pow are blocked, the rest is half.  --op-block-list
replaces the list (an empty string blocks nothing); --node-block-list adds
nodes by name.

Checks: onnx.checker.check_model (plain, not full_check) on every output;
for fp16 also strict shape inference (every node's types against its
schema).  A bf16 file does not pass strict shape inference: the onnx 1.12
schemas of Conv, MaxPool, AveragePool, GlobalAveragePool, Einsum,
InstanceNormalization and HardSigmoid at opsets 13 and 17 (and Where,
BatchNormalization at 13, HardSwish at 17) do not list tensor(bfloat16);
on every file make-models.sh converts it stops at the first Conv with
"[ShapeInferenceError] (op_type:Conv, node name: ...): X typestr: T, has
unsupported type: tensor(bfloat16)", while the plain checker, which checks
structure and attributes, passes.  ONNX
Runtime's CPU provider runs fp16 files (it computes float16 nodes without
a float16 kernel in float32 between inserted casts) but has no bfloat16
Conv kernel, so bf16 files run only in ios.

The output is written atomically (a temporary file, then a rename).
Exit status: 0 ok, 2 bad usage or input, 1 a conversion or check failure.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DEFAULT_OP_BLOCK_LIST = ["LayerNormalization", "Softmax", "LogSoftmax", "ReduceMean", "ReduceSum",
                         "ReduceProd", "Exp", "Pow", "BatchNormalization", "InstanceNormalization"]
HALF = {"fp16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}
FLOAT = TensorProto.FLOAT


class BadInput(Exception):
    pass


def bf16_bits(a):
    """float32 array -> uint16 array of its bfloat16 values, round to nearest
    even; a NaN stays a (quiet) NaN."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        rounded[nan] = ((u[nan] >> 16) | 0x0040).astype(np.uint16)
    return rounded


def bf16_to_float32(bits):
    """uint16 bfloat16 bits -> float32 values (for checks)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def half_tensor(t, half):
    """A float32 TensorProto converted to the half type (same name)."""
    a = numpy_helper.to_array(t).astype(np.float32)
    if half == TensorProto.FLOAT16:
        out = numpy_helper.from_array(a.astype(np.float16), t.name)
    else:
        out = TensorProto()
        out.name = t.name
        out.data_type = TensorProto.BFLOAT16
        out.dims.extend(a.shape)
        out.raw_data = bf16_bits(a).astype("<u2").tobytes()
    if t.doc_string:
        out.doc_string = t.doc_string
    return out


def overflowed(t, half):
    """How many finite values of float32 tensor t become inf in the half type."""
    a = numpy_helper.to_array(t).astype(np.float32)
    with np.errstate(over="ignore"):
        h = a.astype(np.float16).astype(np.float32) if half == TensorProto.FLOAT16 else bf16_to_float32(bf16_bits(a))
    return int(np.count_nonzero(np.isfinite(a) & ~np.isfinite(h)))


def slot_allows_half(schema, index, is_input):
    """Whether an input (or output) slot of an op takes float16: its type is a
    type parameter listing tensor(float16) (not a fixed tensor(float), as
    Resize's scales).  bfloat16 follows float16 (the opset 13 schemas of
    Conv etc. do not list it; ios and GPUs take it)."""
    if schema is None:
        return True
    formals = schema.inputs if is_input else schema.outputs
    if not formals:
        return False
    f = formals[min(index, len(formals) - 1)]
    for c in schema.type_constraints:
        if c.type_param_str == f.typeStr:
            return "tensor(float16)" in c.allowed_type_strs
    return f.typeStr == "tensor(float16)"


def opset_of(model, domain=""):
    for o in model.opset_import:
        if o.domain in (domain, "ai.onnx" if domain == "" else domain):
            return o.version
    return None


def convert(model, to, half_io=False, op_block_list=None, node_block_list=()):
    """Convert model (a ModelProto, float32) in place; returns a dict of counts."""
    half = HALF[to]
    blocked_ops = set(DEFAULT_OP_BLOCK_LIST if op_block_list is None else op_block_list)
    blocked_names = set(node_block_list)
    g = model.graph
    for n in g.node:
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute):
            raise BadInput(f"node '{n.name}' ({n.op_type}) has a subgraph; control flow is not supported")
    if any(i.data_location == TensorProto.EXTERNAL for i in g.initializer):
        raise BadInput("initializers with external data are not supported")

    # Element types of every tensor.
    inferred = onnx.shape_inference.infer_shapes(model)
    etype = {}
    for v in list(inferred.graph.value_info) + list(g.input) + list(g.output):
        if v.type.HasField("tensor_type"):
            etype[v.name] = v.type.tensor_type.elem_type
    for t in g.initializer:
        etype[t.name] = t.data_type
    for n in g.node:
        if n.op_type == "Constant":
            a = n.attribute[0]
            etype[n.output[0]] = (a.t.data_type if a.name == "value" else
                                  FLOAT if a.name in ("value_float", "value_floats") else TensorProto.INT64)
    missing = [o for n in g.node for o in n.output if o and o not in etype]
    if missing:
        raise BadInput(f"shape inference gives no type for {len(missing)} tensors, e.g. '{missing[0]}'")

    def is_float(name):
        return bool(name) and etype.get(name) == FLOAT

    inits = {t.name: t for t in g.initializer}
    const_nodes = {n.output[0]: n for n in g.node if n.op_type == "Constant"}
    constants = set(inits) | set(const_nodes)

    # Shape arithmetic in float: Cast from a non-float, then anything computed
    # from such floats and constants only.
    shape_float = set()
    for n in g.node:
        fin = [i for i in n.input if is_float(i)]
        if n.op_type == "Cast" and n.input and not is_float(n.input[0]):
            shape_float.update(o for o in n.output if is_float(o))
        elif any(i in shape_float for i in fin) and all(i in shape_float or i in constants for i in fin):
            shape_float.update(o for o in n.output if is_float(o))

    opset = opset_of(model)
    schemas = {}

    def schema_of(n):
        key = (n.op_type, n.domain)
        if key not in schemas:
            try:
                schemas[key] = onnx.defs.get_schema(n.op_type, opset, n.domain)
            except Exception:  # an op onnx does not know: treat every float slot as convertible
                schemas[key] = None
        return schemas[key]

    # Per node: "half" (its float slots take the half type where the schema
    # allows float16) or "float" (blocked, shape arithmetic, Constant: decided
    # by its consumers).
    mode = {}
    for k, n in enumerate(g.node):
        floats = [t for t in list(n.input) + list(n.output) if is_float(t)]
        if n.op_type in blocked_ops or n.name in blocked_names:
            mode[k] = "float"
        elif n.op_type == "Constant":
            mode[k] = "const"
        elif floats and all(t in shape_float for t in floats):
            mode[k] = "float"
        else:
            mode[k] = "half"

    def wants(k, i):
        """The type node k wants for its float input slot i."""
        n = g.node[k]
        if mode[k] == "half" and slot_allows_half(schema_of(n), i, True):
            return half
        return FLOAT

    consumers = {}
    for k, n in enumerate(g.node):
        for i, name in enumerate(n.input):
            if is_float(name):
                consumers.setdefault(name, []).append((k, i))
    io_type = half if half_io else FLOAT
    graph_out = {o.name for o in g.output}

    def consumer_types(name):
        ts = {wants(k, i) for k, i in consumers.get(name, [])}
        if name in graph_out:
            ts.add(io_type)
        return ts

    # The type of every float tensor after conversion.
    target = {}
    for v in g.input:
        if is_float(v.name) and v.name not in inits:
            target[v.name] = io_type
    for name in constants:
        if is_float(name):
            target[name] = half if half in consumer_types(name) else FLOAT
    for k, n in enumerate(g.node):
        if n.op_type == "Constant":
            continue
        for j, o in enumerate(n.output):
            if not is_float(o):
                continue
            if mode[k] != "half" or not slot_allows_half(schema_of(n), j, False):
                target[o] = FLOAT
            elif n.op_type == "Cast" and consumer_types(o) == {FLOAT}:
                target[o] = FLOAT  # a Cast to FLOAT that only feeds float32 consumers stays one
            else:
                target[o] = half

    counts = {"initializers": 0, "constants": 0, "casts": 0, "overflow": 0}
    # Initializers and constant values.
    for idx, t in enumerate(g.initializer):
        if t.data_type == FLOAT and target.get(t.name) == half:
            counts["overflow"] += overflowed(t, half)
            g.initializer[idx].CopyFrom(half_tensor(t, half))
            counts["initializers"] += 1
    for k, n in enumerate(g.node):
        if n.op_type == "Constant" and target.get(n.output[0]) == half:
            a = n.attribute[0]
            if a.name == "value":
                t = a.t
            else:
                vals = [a.f] if a.name == "value_float" else list(a.floats)
                t = numpy_helper.from_array(np.array(vals if a.name == "value_floats" else vals[0],
                                                     np.float32))
            counts["overflow"] += overflowed(t, half)
            new = helper.make_attribute("value", half_tensor(t, half))
            del n.attribute[:]
            n.attribute.append(new)
            counts["constants"] += 1
        elif n.op_type == "ConstantOfShape" and target.get(n.output[0]) == half:
            for a in n.attribute:
                if a.name == "value" and a.t.data_type == FLOAT:
                    a.t.CopyFrom(half_tensor(a.t, half))
                    counts["constants"] += 1
        elif n.op_type == "Cast" and is_float(n.output[0]) and target[n.output[0]] == half:
            for a in n.attribute:
                if a.name == "to":
                    a.i = half

    # Graph outputs whose tensor inside has another type: rename it.
    renamed = {}
    for o in g.output:
        if is_float(o.name) and o.name in target and target[o.name] != io_type and o.name not in inits:
            renamed[o.name] = o.name + ("_half" if target[o.name] == half else "_float")
    for n in g.node:
        for j, o in enumerate(n.output):
            if o in renamed:
                n.output[j] = renamed[o]
        for j, i in enumerate(n.input):
            if i in renamed:
                n.input[j] = renamed[i]
    for old, new in renamed.items():
        target[new] = target.pop(old)

    # Casts where a tensor meets a consumer of another type, each emitted
    # before the first node that needs it.
    type_name = {FLOAT: "float", TensorProto.FLOAT16: "fp16", TensorProto.BFLOAT16: "bf16"}
    cast_of = {}
    new_nodes = []
    taken = {n.name for n in g.node} | {o for n in g.node for o in n.output} | {v.name for v in g.input}

    def fresh(base):
        name, i = base, 1
        while name in taken:
            name, i = f"{base}_{i}", i + 1
        taken.add(name)
        return name

    def cast(name, to):
        key = (name, to)
        if key not in cast_of:
            out = fresh(f"{name}_to_{type_name[to]}")
            new_nodes.append(helper.make_node("Cast", [name], [out], name=fresh(f"Cast_{out}"), to=to))
            cast_of[key] = out
            counts["casts"] += 1
        return cast_of[key]

    for k, n in enumerate(g.node):
        for i, name in enumerate(n.input):
            if is_float(name) or name in target:
                want = wants(k, i)
                have = target.get(name, FLOAT)
                if have != want:
                    n.input[i] = cast(name, want)
        new_nodes.append(n)
    for old, new in renamed.items():
        new_nodes.append(helper.make_node("Cast", [new], [old], name=fresh(f"Cast_{old}"), to=io_type))
        counts["casts"] += 1
    del g.node[:]
    g.node.extend(new_nodes)

    # Types of the graph's inputs and outputs; intermediate value_info goes.
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == FLOAT and v.name not in inits:
            v.type.tensor_type.elem_type = io_type
    del g.value_info[:]

    props = {p.key: p.value for p in model.metadata_props}
    props["ios.converted"] = to
    del model.metadata_props[:]
    for key in sorted(props):
        p = model.metadata_props.add()
        p.key, p.value = key, props[key]
    counts["blocked"] = sum(1 for n in new_nodes if n.op_type in blocked_ops or n.name in blocked_names)
    return counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", metavar="IN.onnx")
    ap.add_argument("output", metavar="OUT.onnx")
    ap.add_argument("--to", required=True, help="fp16 or bf16")
    ap.add_argument("--half-io", action="store_true",
                    help="graph inputs and outputs in the half type too (default: float32, with Casts)")
    ap.add_argument("--op-block-list", default=None,
                    help="op types kept in float32, comma-separated (default: %s)" % ",".join(DEFAULT_OP_BLOCK_LIST))
    ap.add_argument("--node-block-list", default="", help="node names kept in float32, comma-separated")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return e.code
    if args.to not in HALF:
        print(f"convert_half: --to must be fp16 or bf16, not '{args.to}'", file=sys.stderr)
        return 2
    if not os.path.isfile(args.input):
        print(f"convert_half: {args.input}: no such file", file=sys.stderr)
        return 2
    try:
        model = onnx.load(args.input)
    except Exception as e:  # protobuf's DecodeError and friends
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"convert_half: {args.input}: not an ONNX model ({why})", file=sys.stderr)
        return 2
    ops = None if args.op_block_list is None else [s.strip() for s in args.op_block_list.split(",") if s.strip()]
    names = [s.strip() for s in args.node_block_list.split(",") if s.strip()]
    try:
        counts = convert(model, args.to, args.half_io, ops, names)
    except BadInput as e:
        print(f"convert_half: {args.input}: {e}", file=sys.stderr)
        return 2
    try:
        onnx.checker.check_model(model)
        if args.to == "fp16":
            onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as e:
        print(f"convert_half: {args.input}: the converted model fails the check: {str(e).splitlines()[0]}",
              file=sys.stderr)
        return 1
    tmp = args.output + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, args.output)
    over = f", {counts['overflow']} weights overflow to inf" if counts["overflow"] else ""
    print(f"convert_half: {args.output}: {args.to}, {counts['initializers']} initializers and "
          f"{counts['constants']} constants converted, {counts['blocked']} blocked nodes, "
          f"{counts['casts']} casts added{over}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
