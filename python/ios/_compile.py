"""ios.compile: a PyTorch module to a callable that runs it with an ios
schedule, in one line (docs/api.md, "From PyTorch in one line").

    run = ios.compile(model, torch.randn(1, 3, 224, 224))   # export, optimize, load
    y = run(x)                                               # torch tensors in and out

The three steps are the ONNX route's: torch.onnx.export, ios.optimize,
ios.Engine. torch is imported only when ios.compile is called, so that
`import ios` does not need it.
"""

import inspect
import os
import tempfile

from ._ios import Engine, UserError, optimize

# The exporter ios.compile uses unless asked for another, and its opset:
# PyTorch's TorchScript exporter at opset 17, the highest it and the ONNX
# checker ios is built with (1.12) share, and the form ios's tests export
# their models in (onnx_models/export_models.py).
DEFAULT_EXPORTER = "torchscript"
TORCHSCRIPT_OPSET = 17


def _first_line(error):
    text = str(error).strip().split("\n")[0]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _names(module, count):
    """ONNX names for the forward's `count` positional inputs: its own
    parameter names where there are that many (so that messages name the
    input as the module does), else input_0, input_1, ..."""
    try:
        params = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:count]]
    if len(names) != count or len(set(names)) != count or any(n.startswith("output_") for n in names):
        names = [f"input_{i}" for i in range(count)]
    return names


def _flat_outputs(value):
    """(tensors, single): the module's output as a list of tensors, and
    whether it was one tensor rather than a tuple or list of them."""
    import torch
    if isinstance(value, torch.Tensor):
        return [value], True
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value), False
    raise UserError(f"ios.compile: the module returned {type(value).__name__}; ios runs modules whose forward "
                    "returns a tensor or a tuple or list of tensors")


def _export(module, inputs, path, input_names, output_names, exporter, opset):
    """torch.onnx.export with the exporter asked for; returns the opset used."""
    import torch
    kwargs = dict(input_names=input_names, output_names=output_names)
    # PyTorch 2.5 and later choose the exporter with dynamo= (True by default
    # from 2.9); PyTorch 1.x and early 2.x have only the TorchScript exporter.
    has_choice = "dynamo" in inspect.signature(torch.onnx.export).parameters
    if exporter == "torchscript":
        opset = TORCHSCRIPT_OPSET if opset is None else opset
        kwargs.update(opset_version=opset, do_constant_folding=True)
        if has_choice:
            kwargs["dynamo"] = False
    elif not has_choice:
        raise UserError(f"ios.compile: exporter='dynamo' needs a PyTorch whose torch.onnx.export takes dynamo= "
                        f"(2.5 and later); this one is {torch.__version__}: use exporter='torchscript'")
    else:
        kwargs["dynamo"] = True
        if opset is not None:
            kwargs["opset_version"] = opset
    try:
        with torch.no_grad():
            torch.onnx.export(module, tuple(inputs), path, **kwargs)
    except Exception as e:  # the exporter's refusal, in one line naming the step
        raise UserError(f"ios.compile: torch.onnx.export ({exporter} exporter"
                        f"{f', opset {opset}' if opset is not None else ''}) failed: {_first_line(e)}") from e
    return opset


class Compiled:
    """A PyTorch module compiled by ios.compile: call it as the module,
    with torch tensors (positionally, in the forward's order, or by the
    names in `input_names`); returns torch tensors, one or a tuple, as the
    module did. Inference only: the outputs carry no autograd history.
    Several threads may call it at once (each runs on a context of its own,
    `Engine`'s rule)."""

    def __init__(self, engine, schedule, input_names, output_names, single_output, exporter, opset, onnx_path):
        self.engine = engine
        self.schedule = schedule
        self.input_names = input_names
        self.output_names = output_names
        self.exporter = exporter
        self.opset = opset
        self.onnx_path = onnx_path  # None: the export was a temporary file, removed
        self._single = single_output
        self._model_inputs = [t["name"] for t in engine.inputs]

    def __call__(self, *args, **kwargs):
        if args and kwargs:
            raise TypeError("give the inputs positionally or by name, not both")
        if args:
            if len(args) != len(self.input_names):
                raise TypeError(f"the module takes {len(self.input_names)} input(s) "
                                f"({', '.join(self.input_names)}); got {len(args)}")
            named = dict(zip(self.input_names, args))
        else:
            named = dict(kwargs)
        feeds = {}
        for name, value in named.items():
            if name not in self._model_inputs and name in self.input_names:
                continue  # an input the module does not read: the export dropped it
            # As the module would take it: a tensor in autograd's graph or a
            # strided view is read as its values.
            if hasattr(value, "detach") and getattr(value, "requires_grad", False):
                value = value.detach()
            if hasattr(value, "is_contiguous") and not value.is_contiguous():
                value = value.contiguous()
            feeds[name] = value
        out = self.engine(feeds)
        if len(self.output_names) == 1:
            return out if self._single else (out,)
        return tuple(out[name] for name in self.output_names)

    def __repr__(self):
        return (f"<ios.Compiled {self.engine.backend}, {self.exporter} exporter"
                f"{f' opset {self.opset}' if self.opset is not None else ''}, {self.schedule!r}>")


def compile(module, example_inputs, *, backend="cpu", exporter=DEFAULT_EXPORTER, opset=None, onnx_path=None,
            engine_options=None, **optimize_options):
    """Exports `module` (a torch.nn.Module, in eval mode) on `example_inputs`
    (a tensor or a tuple of them; their shapes are the compiled shapes) to
    ONNX, finds its schedule with ios.optimize(**optimize_options) and
    loads it into an ios.Engine on `backend` ("cpu" or "cuda"; more Engine
    keywords in `engine_options`). Returns a Compiled, called as the module.

    exporter: "torchscript" (default; opset 17 unless `opset` says) or
    "dynamo" (PyTorch 2.5+; its own opset, 18 or later, IR 10).
    onnx_path: where the ONNX file is kept; None: a temporary file, removed
    once the engine has loaded it."""
    import torch
    if not isinstance(module, torch.nn.Module):
        raise UserError(f"ios.compile: module is a {type(module).__name__}; give a torch.nn.Module")
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor):
            raise UserError(f"ios.compile: example_inputs[{i}] is a {type(t).__name__}; give a torch tensor or a "
                            "tuple of them")
    if exporter not in ("torchscript", "dynamo"):
        raise UserError(f"ios.compile: unknown exporter '{exporter}'; give 'torchscript' or 'dynamo'")
    inputs = tuple(t.detach().contiguous() for t in inputs)
    # Exported and traced as it runs for inference (batch normalization's
    # running statistics, no dropout); the caller's mode is restored.
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            outputs, single = _flat_outputs(module(*inputs))
        input_names = _names(module, len(inputs))
        output_names = [f"output_{i}" for i in range(len(outputs))]
        with tempfile.TemporaryDirectory(prefix="ios-compile-") as folder:
            path = os.fspath(onnx_path) if onnx_path is not None else os.path.join(folder, "model.onnx")
            used_opset = _export(module, inputs, path, input_names, output_names, exporter, opset)
            schedule = optimize(path, **optimize_options)
            engine = Engine(path, schedule, backend=backend, **(engine_options or {}))
    finally:
        module.train(was_training)
    return Compiled(engine, schedule, input_names, output_names, single, exporter, used_opset,
                    os.fspath(onnx_path) if onnx_path is not None else None)
