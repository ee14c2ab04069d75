"""Independent half-precision runs of a PyTorch model: the references that
ios's fp16 and bf16 outputs are judged against (imported by
export_models.py --half-truth).

ios's accuracy rule for half precision: compared with the float64 truth, each
half-precision output of ios may have an error (rms and max-abs) of at most
twice that of an independent half-precision run of the same model, plus a
small absolute floor.  These functions make that independent run.

bf16_reference(model, x)
    PyTorch's own bfloat16 on the CPU: a deep copy of the model with every
    parameter and buffer cast to bfloat16 (`.to(torch.bfloat16)`), run on x
    cast to bfloat16; every operator stores its result in bfloat16 (how it
    accumulates inside, e.g. oneDNN's convolutions in float32, is PyTorch's
    business).  Outputs returned as float32.  If an operator of the model has
    no bfloat16 CPU kernel in this torch, the caller falls back to
    emulated_reference(model, x, torch.bfloat16) (torch 1.13 has one for
    every operator of the models ios exports).

fp16_emulated_reference(model, x)
    PyTorch 1.13 has no float16 convolution on the CPU (nor float16 matmul in
    most paths), so float16 is emulated in float32:
      * the weights: every floating-point parameter and buffer of a float32
        copy of the model is rounded to float16 (`t.half().float()`), so the
        model computes with exactly the values an fp16 file holds;
      * the input is rounded to float16;
      * a forward hook on every module, leaf and container alike, rounds each
        floating-point tensor of its output (tensors, tuples, lists, dicts) to
        float16: every layer's result, and every block's, is stored as
        float16 would store it.
    Each operator itself computes in float32 on float16-representable
    values, as ONNX Runtime's CPU provider does for float16 models (it
    computes float16 nodes in float32 between casts) and as a GPU's fp16
    kernels with float32 accumulation do.  Not rounded: the intermediates of
    functional operations inside one module's forward (e.g. a residual add,
    an attention's softmax written with torch.* calls) until that module
    returns.  Outputs returned as float32.

Both are deterministic for a given torch build, thread count and machine.
"""

import copy

import torch

__all__ = ["bf16_reference", "fp16_emulated_reference", "emulated_reference", "round_to"]


def round_to(value, dtype):
    """Round every floating-point tensor in value (a tensor, or a tuple, list
    or dict of them, nested) to dtype and back to float32; other values are
    returned unchanged."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype).float() if value.is_floating_point() else value
    if isinstance(value, tuple):
        rounded = [round_to(v, dtype) for v in value]
        return type(value)(*rounded) if hasattr(value, "_fields") else tuple(rounded)
    if isinstance(value, list):
        return [round_to(v, dtype) for v in value]
    if isinstance(value, dict):
        out = copy.copy(value)  # keeps an OrderedDict an OrderedDict
        for k in value:
            out[k] = round_to(value[k], dtype)
        return out
    return value


def _as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


@torch.no_grad()
def emulated_reference(model, x, dtype):
    """The model run in float32 with its weights, its input and every
    module's output rounded to dtype (torch.float16 or torch.bfloat16).
    Returns a tuple of float32 tensors, one per model output."""
    m = copy.deepcopy(model).float().eval()
    for t in list(m.parameters()) + list(m.buffers()):
        if t.is_floating_point():
            t.copy_(t.to(dtype).float())
    hooks = [mod.register_forward_hook(lambda _m, _in, out: round_to(out, dtype)) for mod in m.modules()]
    try:
        out = m(round_to(x.float(), dtype))
    finally:
        for h in hooks:
            h.remove()
    return tuple(o.float() for o in _as_tuple(out))


def fp16_emulated_reference(model, x):
    """float16 emulated in float32 (see the module's docstring)."""
    return emulated_reference(model, x, torch.float16)


@torch.no_grad()
def bf16_reference(model, x):
    """PyTorch's bfloat16 CPU kernels.  Returns (outputs, how): a tuple of
    float32 tensors and "torch" or, if some operator has no bfloat16 CPU
    kernel, the emulation's outputs and "emulated (<error>)"."""
    try:
        m = copy.deepcopy(model).to(torch.bfloat16).eval()
        out = m(x.to(torch.bfloat16))
        return tuple(o.float() for o in _as_tuple(out)), "torch"
    except RuntimeError as e:  # "... not implemented for 'BFloat16'"
        why = str(e).split("\n")[0]
        return emulated_reference(model, x, torch.bfloat16), f"emulated ({why})"
