#!/usr/bin/env bash
# onnx_models/export_models.py on the newer PyTorch and onnx of a GPU machine
# (PyTorch 2.9+ exports with dynamo by default; onnx 1.16+ has no
# onnx.mapping): the export keeps the TorchScript exporter where a switch
# exists, and element types map to numpy through whichever API this onnx has.
source "$(dirname "$0")/common.bash"
src=${IOS_SOURCE_DIR:?set by ctest}
expect_ok "export_models helpers" -- /usr/bin/python3 - "$src/onnx_models" <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import export_models as em

def newer_export(model, args, f, dynamo=True, **kw):  # PyTorch 2.9+'s signature, in part
    pass

def older_export(model, args, f, export_params=True, opset_version=None):  # PyTorch 1.13's, in part
    pass

assert em.legacy_export_options(newer_export) == {"dynamo": False}
assert em.legacy_export_options(older_export) == {}
assert em.np_dtype_of(1) == np.float32 and em.np_dtype_of(7) == np.int64 and em.np_dtype_of(10) == np.float16
PY
finish
