#!/usr/bin/env bash
# One model of the GPU kit (called by scripts/gpu/prepare.sh, two at a time):
#
#   kit_model.sh full|strip SET MODEL.onnx PACK CANONICAL WEIGHTS_TOOL [DATA]
#
# strip: PACK/models/SET/NAME is MODEL's skeleton (ios-model-weights strip),
#        nothing else (the size check).
# full:  the same, with the skeleton's RMS marks calibrated so that the
#        rebuilt model keeps the export's layer scales, the rebuilt model
#        checked (every Conv and Gemm output's rms within 2x of the export's,
#        max |output| <= 50), and with DATA=yes the accuracy data of the
#        rebuilt model in PACK/accuracy/STEM (scripts/gpu/accuracy.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=$1 set=$2 model=$3 pack=$4 canonical=$5 weights=$6 with_data=${7:-no}
py=${IOS_PYTHON:-/usr/bin/python3}
name=$(basename "$model")
skeleton="$pack/models/$set/$name"
rebuilt="$canonical/$set/$name"
if [ "$mode" = strip ]; then
  # The size check (prepare.sh --size-check): the skeleton alone.
  "$weights" strip "$model" "$skeleton" 2>/dev/null
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$weights" strip "$model" "$tmp/raw.onnx" 2>/dev/null
data=()
[ "$with_data" = yes ] && data=(--data "$pack/accuracy/${name%.onnx}")
"$py" scripts/gpu/accuracy.py rebuild "$model" "$tmp/raw.onnx" "$skeleton" "$rebuilt" --weights-tool "$weights" \
  "${data[@]}" 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
grep -E '^accuracy: ' "$tmp/log" | sed "s|^accuracy: |prepare: $set/|" || true
