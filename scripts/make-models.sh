#!/usr/bin/env bash
# Generates the ONNX models into onnx_models/generated/ (never committed).
# Re-exports only when the export scripts changed (a stamp holds their hash).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${IOS_PYTHON:-/usr/bin/python3}  # the GPU machine has no Debian python: IOS_PYTHON=python3
out=onnx_models/generated
stamp="$out/.stamp"
hash=$(cat onnx_models/*.py onnx_models/randwire_graphs/* scripts/make-models.sh | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
  echo "models: up to date in $out"
  exit 0
fi
mkdir -p "$out"
start=$(date +%s)
# The exports are independent processes, each single-threaded for most of
# its time (tracing, ONNX serialisation, the checks): `job` queues one and
# they run two at a time below, longest first as far as known, each writing
# its own files (a temporary file, then a rename).
jobs=()
job() { jobs+=("$(printf '%q ' "$py" onnx_models/export_models.py "$@" --out-dir "$out")"); }
# The next families as torchvision 0.14 exports them (opset 13, static batch
# 1), with their truths and half-precision references: MaxViT-T at 224x224
# (its partitions need a multiple of 224), Swin-T at 112x112 (windows of 7 on
# padded feature maps), and the detectors' raw heads, SSDlite at its 320x320
# and RetinaNet and FCOS at 128x128 (five pyramid levels down to 1x1).
job --truth --half-truth --models maxvit_t
job --truth --half-truth --models ssdlite320_mobilenet_v3_large
job --truth --half-truth --models retinanet_resnet50_fpn --image-size 128x128
job --truth --half-truth --models fcos_resnet50_fpn --image-size 128x128
job --truth --half-truth --models swin_t --image-size 112x112
# Every model with a symbolic batch dimension (files named NAME-bdyn.onnx):
# ios takes the batch from --batch. The torchvision CNNs at their native sizes;
# the IOS paper's RandWire and NASNet-A at reduced input sizes for the tests
# (the same graphs; bench/harness exports the full-size ones).
for model in inception_v3 densenet121 resnet50 googlenet mobilenet_v2 squeezenet1_1; do
  job --dynamic-batch --models "$model"
done
job --dynamic-batch --models randwire --image-size 64x64
job --dynamic-batch --models nasnet_a_large --image-size 99x99
# The IOS paper's four networks at small sizes with a static batch of 1, with
# their truths and half-precision references (--half-truth, below).
job --truth --half-truth --models nasnet_a_large --image-size 99x99
job --truth --half-truth --models inception_v3 --image-size 75x75
job --truth --half-truth --models squeezenet1_1,randwire --image-size 64x64
# The families deployed today, with a seeded input and the float64 truth
# beside each file (--truth) and the independent bf16 and fp16 runs of the
# model on that input (--half-truth: <stem>.ref-bf16.npy, .ref-fp16.npy): every family at opset 13 with a symbolic batch
# and at opset 17 with a static one; ConvNeXt and the ViT-style encoder, whose
# LayerNorm and class-token arithmetic differ between the opsets, also at
# opset 13 with a static batch and opset 17 with a symbolic one. The
# segmentation models at 128x128 and ConvNeXt at 64x64 (same graphs).
for opts in "--dynamic-batch" "--opset 17" "--batch 1" "--opset 17 --dynamic-batch"; do
  case "$opts" in
    "--dynamic-batch" | "--opset 17") families="deeplabv3_resnet50,fcn_resnet50 convnext_tiny vit_style" ;;
    *) families="convnext_tiny vit_style" ;;
  esac
  for models in $families; do
    size=()
    case "$models" in
      deeplabv3*) size=(--image-size 128x128) ;;
      convnext*) size=(--image-size 64x64) ;;
    esac
    # shellcheck disable=SC2086  # several words on purpose
    job $opts --truth --half-truth --models "$models" "${size[@]}"
  done
done
# Networks of other ranks (opset 13, static batch 1), with their truths:
# torchvision's video classifiers on 4x28x28 clips (N,3,T,H,W; about 1.4
# GFLOP each, R(2+1)D also with its half-precision references), the 1-D audio
# CNN on 2048 samples (N,1,L) and the HRNet-style network at 64x64. S3D is
# not exported here: its fixed final pool needs clips of 13x209x209 or more,
# 30 GFLOP, 15-45 s to export and 17 s for its comparison's CPU runs, more
# than CI's budget leaves.
job --truth --models r3d_18,mc3_18 --image-size 4x28x28
job --truth --half-truth --models r2plus1d_18 --image-size 4x28x28
job --truth --models audio_cnn,hrnet_style
# xargs exits non-zero when any export fails (set -e stops here).
printf '%s\n' "${jobs[@]}" | xargs -P 2 -I{} bash -c {}
echo "models: ${#jobs[@]} exports in $(( $(date +%s) - start )) s"
# Typed half-precision files of the acceptance set: <stem>.fp16.onnx and
# <stem>.bf16.onnx (float32 inputs and outputs, Casts inside; the reduction
# and normalisation ops stay float32, see convert_half.py), two at a time.
half_start=$(date +%s)
for stem in inception_v3-75x75 squeezenet1_1-64x64 randwire-64x64 nasnet_a_large-99x99 convnext_tiny-64x64 \
  vit_style deeplabv3_resnet50-128x128-op17 fcn_resnet50-128x128-op17 swin_t-112x112 \
  retinanet_resnet50_fpn-128x128 maxvit_t r2plus1d_18-4x28x28; do
  for to in fp16 bf16; do echo "$out/$stem.onnx $out/$stem.$to.onnx --to $to"; done
done | xargs -P 2 -L 1 "$py" onnx_models/convert_half.py
echo "models: half-precision files converted in $(( $(date +%s) - half_start )) s"
$py onnx_models/make_bad_models.py "$out/bad"
echo "$hash" >"$stamp.tmp"  # a new file, then a rename: never write through a hard link
mv "$stamp.tmp" "$stamp"
echo "models: exported in $(( $(date +%s) - start )) s"
