#!/usr/bin/env bash
# What travels to the GPU machine fits, whatever onnx_models/generated holds:
# scripts/gpu/prepare.sh --size-check strips every generated model (float32,
# float16 and bfloat16 weights alike), packs the programs and their libraries
# and compresses the kit as prepare.sh does for a GPU run, without schedules
# or calibration (neither changes the size much: the calibrated marks have the
# same length, the schedules are a few hundred KiB). The archive plus the
# working tree must stay under 48 MiB, and the check well under 2 minutes
# alone (45-55 s on the 2-core machine).
source "$(dirname "$0")/common.bash"
src=${IOS_SOURCE_DIR:?set by ctest}
export IOS_BUILD_DIR
IOS_BUILD_DIR=$(cd "$IOS_BIN/.." && pwd)
pack="$WORK/pack"
t0=$(date +%s)
expect_ok "prepare --size-check" -- "$src/scripts/gpu/prepare.sh" --size-check --pack "$pack"
secs=$(($(date +%s) - t0))
total=$(sed -n 's/.* = \([0-9]*\) MiB (limit 48 MiB).*/\1/p' "$WORK/stdout")
[ -n "$total" ] || fail "prepare --size-check does not report what travels: $(cat "$WORK/stdout")"
[ "$total" -lt 48 ] || fail "what travels is $total MiB (limit 48)"
# Alone it takes 45-55 s here (docs/cuda-backend.md); 180 s leaves room for
# a loaded CI machine, whose other test shares the two cores.
[ "$secs" -le 180 ] || fail "the size check took $secs s (limit 180)"
# Every generated model is in it, the typed ones included.
generated=$(ls "$src"/onnx_models/generated/*.onnx | wc -l)
[ "$(wc -l <"$pack/models/manifest.tsv")" = "$generated" ] ||
  fail "the manifest lists $(wc -l <"$pack/models/manifest.tsv") models of $generated"
grep -q '\.fp16\.onnx' "$pack/models/manifest.tsv" || fail "no typed model in the kit"
echo "size check: $total MiB travel, ${secs} s" >&2
ok
finish
