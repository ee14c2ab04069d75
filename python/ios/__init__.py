"""ios: inter-operator scheduling for CNN inference (optimize a model, run it
with its schedule).

    schedule = ios.optimize("model.onnx", batch=1)            # ios-optimize as a call
    engine = ios.Engine("model.onnx", schedule)                # ios-run's engine
    y = engine(x)                                              # numpy, torch or CuPy in and out
    run = ios.compile(torch_module, example_inputs)            # from PyTorch in one line

The classes and ios.optimize are the extension ios._ios (python/ios_module.cpp,
over the C++ API include/ios/engine.h); ios.compile is Python (_compile.py).
Reference: docs/api.md, "Python".
"""

from ._ios import (Context, DeviceError, Engine, Error, InternalError, NoDeviceError, OutOfMemoryError, Schedule,
                   UserError, optimize)
from ._compile import Compiled, compile  # noqa: A001 (the name torch.compile has too)

__all__ = ["Compiled", "Context", "DeviceError", "Engine", "Error", "InternalError", "NoDeviceError",
           "OutOfMemoryError", "Schedule", "UserError", "compile", "optimize"]

# Shown as ios.Engine, ios.UserError... (repr, tracebacks, help), the names
# users write, rather than the extension's ios._ios.
for _name in __all__:
    try:
        globals()[_name].__module__ = __name__
    except (AttributeError, TypeError):  # an object whose __module__ cannot be set keeps its own
        pass
del _name
