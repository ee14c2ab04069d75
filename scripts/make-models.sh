#!/usr/bin/env bash
# Generates the ONNX models into onnx_models/generated/ (never committed).
# Re-exports only when the export scripts changed (a stamp holds their hash).
set -euo pipefail
cd "$(dirname "$0")/.."
py=/usr/bin/python3
out=onnx_models/generated
stamp="$out/.stamp"
hash=$(cat onnx_models/*.py scripts/make-models.sh | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
  echo "models: up to date in $out"
  exit 0
fi
mkdir -p "$out"
start=$(date +%s)
# The torchvision CNNs at their native sizes, batch dimension symbolic.
$py onnx_models/export_models.py --models inception_v3,squeezenet1_1,resnet50,mobilenet_v2,densenet121,googlenet --out-dir "$out" --dynamic-batch
# The IOS paper's RandWire and NASNet-A at full size, and small versions for tests.
$py onnx_models/export_models.py --models randwire,nasnet_a_large --out-dir "$out" --dynamic-batch
$py onnx_models/make_bad_models.py "$out/bad"
echo "$hash" >"$stamp"
echo "models: exported in $(( $(date +%s) - start )) s"
