#!/usr/bin/env bash
# Proves the checkout needs nothing beside it: a fresh clone has no ../shared.
#  1. No tracked file outside docs/ refers to ../shared (or its data folder).
#  2. A copy of the checkout in an empty temporary folder exports the RandWire
#     model byte-identical to the one the tests use (so the export reads the
#     committed graphs), builds, and passes the scheduler tests (RandWire
#     Table 1 reads the committed graphs), the bad-input CLI tests and the
#     README's optimize command.
# To keep CI short the copy reuses the exported models (make-models.sh
# re-exports them if the copy's scripts or graphs differ from the stamp) and
# builds without CUDA and only the programs those tests run.
#   scripts/check-self-contained.sh     (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { echo "self-contained: $* ($(( $(date +%s) - start )) s)"; }

# 1. Text references (this file names the folder it looks for, so it is left out).
pattern='\.\./shared|shared/data/'
if git grep -nE "$pattern" -- . ':!docs' ':!scripts/check-self-contained.sh'; then
  echo "self-contained: FAILED: the files above refer to ../shared; commit what they need instead" >&2
  exit 1
fi
step "no tracked file outside docs/ refers to ../shared"

# 2. A copy with nothing beside it.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copy="$tmp/ios"
mkdir -p "$copy"
git ls-files -z --cached --others --exclude-standard |
  tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$copy"
mkdir -p "$copy/onnx_models"
cp -al onnx_models/generated "$copy/onnx_models/"  # hard links: no copying
step "copied the checkout to $copy"
(
  cd "$copy"
  scripts/make-models.sh
  /usr/bin/python3 onnx_models/export_models.py --dynamic-batch --out-dir "$tmp/export" \
    --models randwire --image-size 64x64 >"$tmp/export.log" 2>&1 || { cat "$tmp/export.log"; exit 1; }
  if ! cmp -s "$tmp/export/randwire-bdyn-64x64.onnx" onnx_models/generated/randwire-bdyn-64x64.onnx; then
    cat "$tmp/export.log"
    echo "self-contained: FAILED: the copy exports a different RandWire model (did it miss the graphs?)" >&2
    exit 1
  fi
)
step "the copy exports the same RandWire model"
(
  cd "$copy"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIOS_ENABLE_CUDA=OFF \
    -DIOS_WARNINGS_AS_ERRORS=ON >/dev/null
  cmake --build build -j "$(nproc)" --target ios-optimize ios-run ios_sched_tests >/dev/null
)
step "the copy builds"
(
  cd "$copy/build"
  ctest --output-on-failure -j "$(nproc)" -L sched >"$tmp/ctest.log" 2>&1 || { cat "$tmp/ctest.log"; exit 1; }
  tail -n 3 "$tmp/ctest.log"
  grep -q 'RandWire block ws-32-4-0.75-4 matches Table 1' "$tmp/ctest.log" ||
    { echo "self-contained: FAILED: the RandWire Table 1 test did not run" >&2; exit 1; }
  ctest --output-on-failure -R 'cli: bad_inputs' >"$tmp/ctest-cli.log" 2>&1 || { cat "$tmp/ctest-cli.log"; exit 1; }
  cd ..
  build/apps/ios-optimize onnx_models/generated/inception_v3-bdyn.onnx --batch 1 \
    -o schedules/inception_v3.ios.schedule.json --quiet
  test -s schedules/inception_v3.ios.schedule.json
)
step "PASSED: the copy's tests and the README's optimize command pass"
