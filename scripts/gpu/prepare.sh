#!/usr/bin/env bash
# Prepares the GPU kit here, on the development machine: everything
# scripts/gpu/first-run.sh needs on a lent GPU machine, packed as one xz
# archive (.devpack.tar.xz) that travels with the working tree (at most
# 48 MiB together, checked here; the device tool carries 64 MiB).
#
#   scripts/build.sh && scripts/gpu/prepare.sh              # writes .devpack/ and .devpack.tar.xz
#   scripts/gpu/prepare.sh --dry-run --pack DIR             # a small kit for first-run.sh --dry-run (CI)
#   scripts/gpu/prepare.sh --size-check --pack DIR          # CI: every generated model stripped, the
#                                                           # programs, compressed; no schedules, no
#                                                           # calibration; fails over 48 MiB
#
# What the kit holds (docs/cuda-backend.md, "The GPU kit"):
#   bin/      ios-optimize, ios-run, ios_gpu_tests, ios-model-weights, stripped,
#             with an RPATH of $ORIGIN/../lib (no LD_LIBRARY_PATH there)
#   lib/      their shared libraries that the GPU machine lacks (Debian's
#             protobuf, onnx, spdlog, fmt, sqlite, ..., and libcudart); cuDNN
#             and cuBLAS are far too large and come from the GPU machine's
#             own wheels, linked into lib/ by first-run.sh at start
#   models/   every model as a skeleton (ios-model-weights strip: the graph,
#             float32, float16 and bfloat16 weights emptied, a per-channel RMS
#             kept) and manifest.tsv, the SHA-256 of each model as
#             ios-model-weights fill rebuilds it, which the prepared schedules
#             carry; test/ holds the test-size models the GPU tests run (the
#             typed *.fp16.onnx / *.bf16.onnx files too), bench/ the full-size
#             benchmark models. The RMS values are calibrated: the rebuilt
#             model's every Conv and Gemm output is as large as the export's
#             on the same input (scripts/gpu/onnx_torch.py calibrate), checked
#             by scripts/gpu/accuracy.py check-scales (max |output| <= 50)
#   accuracy/STEM/  each rebuilt test model's input and float64 truth
#             (scripts/gpu/accuracy.py data), which the GPU model test judges
#             ios's outputs against
#   schedules/PROFILE/MODEL/LABEL.json: every scheduler's schedule of every
#             benchmark model, found with the simulator on the h100 and h200
#             device profiles; variants/PROFILE/MODEL/VARIANT/LABEL.json the
#             sequential, greedy and IOS schedules at fp16 and bf16 (batch 1)
#             and at TF32 and fp16 at batch 16 (VARIANT fp16, bf16, b16-tf32,
#             b16-fp16)
#   kit.env   what the kit was built against (cuDNN and CUDA versions, commit)
#
# Every needed library of every packed file (readelf -d) must be in lib/ or
# on the allow-list of what the GPU machine has (C runtime, driver, the CUDA
# wheels); anything else is named and the script fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
dry_run=0
size_check=0
pack=.devpack
limit_mib=48
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --size-check) size_check=1 ;;
    --pack) pack=${2:?--pack needs a folder}; shift ;;
    *) echo "usage: $0 [--dry-run | --size-check] [--pack DIR]" >&2; exit 2 ;;
  esac
  shift
done
build=${IOS_BUILD_DIR:-build}
py=${IOS_PYTHON:-/usr/bin/python3}
generated=onnx_models/generated
programs=("$build/apps/ios-optimize" "$build/apps/ios-run" "$build/test/ios_gpu_tests" "$build/tools/ios-model-weights")
for p in "${programs[@]}"; do
  [ -x "$p" ] || { echo "prepare: $p is missing: run scripts/build.sh first" >&2; exit 2; }
done
[ -f "$generated/.stamp" ] || { echo "prepare: $generated has no models: run scripts/make-models.sh first" >&2; exit 2; }
command -v patchelf >/dev/null || { echo "prepare: patchelf is missing (scripts/setup.sh installs it)" >&2; exit 2; }
t0=$(date +%s)
weights="$build/tools/ios-model-weights"

# The benchmark models at their full sizes and the test set at the sizes CI
# uses. A dry run takes two small models for both; a size check packs every
# generated model as the test set and no benchmark model (the two full-size
# exports' skeletons are under a MiB each).
if [ "$dry_run" = 1 ]; then
  bench_models=("$generated/squeezenet1_1-bdyn.onnx" "$generated/googlenet-bdyn.onnx")
  test_models=("$generated/squeezenet1_1-bdyn.onnx")
  profiles=(h100)
elif [ "$size_check" = 1 ]; then
  bench_models=()
  mapfile -t test_models < <(ls "$generated"/*.onnx)
  profiles=()
else
  export_dir="$build/gpu-kit/export"
  mkdir -p "$export_dir"
  for spec in randwire nasnet_a_large; do
    if [ ! -f "$export_dir/$spec-bdyn.onnx" ]; then
      echo "prepare: exporting $spec at its full size (once; kept in $export_dir)"
      "$py" onnx_models/export_models.py --dynamic-batch --out-dir "$export_dir" --models "$spec" >/dev/null
    fi
  done
  bench_models=("$generated/inception_v3-bdyn.onnx" "$generated/squeezenet1_1-bdyn.onnx"
    "$export_dir/randwire-bdyn.onnx" "$export_dir/nasnet_a_large-bdyn.onnx")
  mapfile -t test_models < <(ls "$generated"/*.onnx)
  profiles=(h100 h200)
fi

rm -rf "$pack" "$pack.tar.xz"
mkdir -p "$pack/bin" "$pack/lib" "$pack/models/test" "$pack/models/bench" "$pack/schedules" "$pack/accuracy"
canonical="$build/gpu-kit/canonical"
rm -rf "$canonical"
mkdir -p "$canonical/test" "$canonical/bench"

# Skeletons, and the canonical models rebuilt from them: the files the GPU
# machine will rebuild byte for byte. Each model in a process of its own, two
# at a time (scripts/gpu/kit_model.sh: strip, calibrate, fill, check, truth).
# A size check strips only: calibration changes numbers in the marks, not
# their length.
# The accuracy data are made for the files the GPU model test runs: one per
# model name, the symbolic batch preferred, else the first by name
# (test/gpu/gpu_util.cpp, shipped_models); typed files and other opsets are
# not among them.
declare -A tested
for model in "${test_models[@]}"; do
  file=$(basename "$model")
  [[ "$file" =~ ^([a-z0-9_]+)(-b[0-9]+|-bdyn)?(-[0-9]+(x[0-9]+)*)?\.onnx$ ]] || continue
  name=${BASH_REMATCH[1]}
  if [ -z "${tested[$name]:-}" ] || { [ "${BASH_REMATCH[2]}" = -bdyn ] && [[ "${tested[$name]}" != *-bdyn* ]]; }; then
    tested[$name]=$file
  fi
done
jobs=()
for set in test bench; do
  if [ "$set" = test ]; then list=("${test_models[@]}"); else list=("${bench_models[@]}"); fi
  for model in "${list[@]}"; do
    data=no
    [ "$set" = test ] && [[ " ${tested[*]} " == *" $(basename "$model") "* ]] && data=yes
    jobs+=("$set|$model|$data")
  done
done
mode=full
[ "$size_check" = 1 ] && mode=strip
printf '%s\n' "${jobs[@]}" | xargs -P "$(nproc)" -I{} bash -c '
  IFS="|" read -r set model data <<<"{}"
  IOS_PYTHON="'"$py"'" scripts/gpu/kit_model.sh "'"$mode"'" "$set" "$model" "'"$pack"'" "'"$canonical"'" "'"$weights"'" "$data" ||
    { echo "prepare: $model failed (above)" >&2; exit 255; }'
: >"$pack/models/manifest.tsv"
for entry in "${jobs[@]}"; do
  IFS="|" read -r set model data <<<"$entry"
  name=$(basename "$model")
  hash=-  # a size check rebuilds nothing
  [ "$size_check" = 1 ] || hash=$(sha256sum "$canonical/$set/$name" | cut -c1-64)
  printf '%s/%s\t%s\n' "$set" "$name" "$hash" >>"$pack/models/manifest.tsv"
done
echo "prepare: $(wc -l <"$pack/models/manifest.tsv") models as skeletons ($(du -sm "$pack/models" | cut -f1) MiB)," \
  "accuracy data of $(ls "$pack/accuracy" | wc -l) ($(du -sm "$pack/accuracy" | cut -f1) MiB)"

# The canonical benchmark models run on ios's own CPU reference too: finite,
# not all zero, at batch 1.
for model in "$canonical"/bench/*.onnx; do
  [ -f "$model" ] || continue
  out=$(mktemp -d)
  "$build/apps/ios-run" "$model" --backend cpu --batch 1 --iterations 1 --warmup 0 --output-dir "$out" >/dev/null 2>&1 ||
    { echo "prepare: $model does not run on the CPU backend" >&2; exit 1; }
  "$py" - "$out" "$model" <<'PY'
import glob, sys
import numpy as np
for f in glob.glob(sys.argv[1] + "/*.npy"):
    a = np.load(f)
    if not np.all(np.isfinite(a)) or not np.any(a):
        sys.exit(f"prepare: {sys.argv[2]}: output {f} is not finite or all zero")
    print(f"prepare: {sys.argv[2].split('/')[-1]}: {f.split('/')[-1]} on ios's CPU executor: max|out| {float(np.max(np.abs(a))):.3g}")
PY
  rm -rf "$out"
done

# Every scheduler's schedule of every benchmark model, on each profile (the
# labels and parameters of bench/harness/run_benchmarks.py), and the
# sequential, greedy and IOS schedules of each variant (precision, batch).
schedulers=("sequential:sequential:" "greedy:greedy:" "ios:ios:" "ios-parallel:ios:strategy=parallel"
  "ios-merge:ios:strategy=merge" "dos:dos:" "lios:lios:" "nimble:nimble:")
variants=("fp16:1:fp16" "bf16:1:bf16" "b16-tf32:16:" "b16-fp16:16:fp16")
jobs=()
for profile in "${profiles[@]}"; do
  for model in "$canonical"/bench/*.onnx; do
    name=$(basename "$model" .onnx)
    mkdir -p "$pack/schedules/$profile/$name"
    for entry in "${schedulers[@]}"; do
      IFS=: read -r label scheduler params <<<"$entry"
      jobs+=("$model|$profile|$scheduler|$params|1||$pack/schedules/$profile/$name/$label.json")
    done
    [ "$dry_run" = 1 ] && [ "$name" != squeezenet1_1-bdyn ] && continue  # CI: one model's variants
    for variant in "${variants[@]}"; do
      IFS=: read -r vname batch precision <<<"$variant"
      mkdir -p "$pack/variants/$profile/$name/$vname"
      for label in sequential greedy ios; do
        jobs+=("$model|$profile|$label||$batch|$precision|$pack/variants/$profile/$name/$vname/$label.json")
      done
    done
  done
done
if [ ${#jobs[@]} -gt 0 ]; then
printf '%s\n' "${jobs[@]}" | xargs -P "$(nproc)" -I{} bash -c '
  IFS="|" read -r model profile scheduler params batch precision out <<<"{}"
  args=("$model" --batch "$batch" --cost simulated --device-profile "$profile" --scheduler "$scheduler" -o "$out" --quiet)
  [ -n "$params" ] && args+=(--params "$params")
  [ -n "$precision" ] && args+=(--precision "$precision")
  case "$scheduler" in ios | dos) args+=(--time-limit 60) ;; esac
  "'"$build"'/apps/ios-optimize" "${args[@]}" || { echo "prepare: ios-optimize failed: ${args[*]}" >&2; exit 255; }'
fi
echo "prepare: ${#jobs[@]} schedules (${profiles[*]:-no} profiles)"

# Programs and their libraries.
allow='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|librt\.so\.1|libpthread\.so\.0|libgcc_s\.so\.1|libstdc\+\+\.so\.6|libz\.so\.1|libcuda\.so\.1|libcudnn[a-z_]*\.so\.9|libcublas(Lt)?\.so\.13|libnvrtc\.so\.13|libnvJitLink\.so\.13)$'
for p in "${programs[@]}"; do
  cp "$p" "$pack/bin/"
  strip "$pack/bin/$(basename "$p")"
done
# The libraries the programs load here, resolved through this machine's
# loader, closed over their own dependencies; the allow-listed ones stay.
for p in "${programs[@]}"; do
  ldd "$p" | awk '/=> \//{print $1, $3}'
done | sort -u | while read -r name path; do
  if ! [[ "$name" =~ $allow ]]; then cp -L "$path" "$pack/lib/$name"; fi
done
for f in "$pack"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$pack"/lib/*; do patchelf --set-rpath '$ORIGIN' "$f"; done
missing=()
for f in "$pack"/bin/* "$pack"/lib/*; do
  while read -r needed; do
    [[ "$needed" =~ $allow ]] || [ -f "$pack/lib/$needed" ] || missing+=("$(basename "$f") needs $needed")
  done < <(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done
if [ ${#missing[@]} -gt 0 ]; then
  printf 'prepare: missing from the kit and the allow-list: %s\n' "${missing[@]}" >&2
  exit 1
fi

cudnn_header=$(grep -h -E '#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ' /usr/local/cuda/include/cudnn_version.h 2>/dev/null |
  awk '{print $3}' | paste -sd. -)
{
  echo "commit='$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +changes)'"
  echo "prepared='$(date -u +%Y-%m-%dT%H:%MZ)'"
  echo "dry_run='$dry_run'"
  echo "cudnn_built_against='${cudnn_header:-unknown}'"
  echo "cuda_built_against='$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')'"
  echo "profiles='${profiles[*]}'"
} >"$pack/kit.env"

# One archive travels (xz, multi-threaded): first-run.sh unpacks it there.
# The folder stays here for a dry run and for reading.
tar -C "$pack" -cf - . | xz -T0 -6 >"$pack.tar.xz.partial"
mv "$pack.tar.xz.partial" "$pack.tar.xz"

# What travels: tracked and untracked-not-ignored files, and the archive.
tree=$(git ls-files -z -co --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{ t += $1 } END { print t + 0 }')
kit=$(stat -c %s "$pack.tar.xz")
total=$(( (tree + kit) / 1048576 ))
echo "prepare: kit $(( $(du -sb "$pack" | cut -f1) / 1048576 )) MiB, as $(basename "$pack").tar.xz $((kit / 1048576)) MiB," \
  "+ working tree $((tree / 1048576)) MiB = ${total} MiB (limit ${limit_mib} MiB), in $(( $(date +%s) - t0 )) s"
[ "$total" -lt "$limit_mib" ] || { echo "prepare: what travels is too large (limit ${limit_mib} MiB)" >&2; exit 1; }
