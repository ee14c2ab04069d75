#!/usr/bin/env bash
# Proves the checkout needs nothing beside it (a user's fresh clone has no
# sibling folders), and runs the input-parsing tests under AddressSanitizer +
# UBSan, in one build to keep CI short:
#  1. A copy of the checkout in an empty temporary folder exports the RandWire
#     model byte-identical to the one the tests use (so the export reads the
#     committed graphs).
#  2. The copy builds without CUDA, with -DIOS_SANITIZE=address,undefined
#     (-fno-sanitize-recover), the two programs and the test programs of the
#     output policy, the importer, the schedule file and the .npy reader; then
#     passes, under the sanitizers, the core, sched, onnx and exec tests
#     (RandWire Table 1 reads the committed graphs) and the CLI tests of bad,
#     hostile and output files (cli: bad_inputs, hostile_*, output_files),
#     and the README's optimize command. scripts/sanitize.sh runs the whole
#     host suite under the sanitizers (by hand: about 40 minutes on 2 cores).
# The copy reuses the exported models (make-models.sh re-exports them if the
# copy's scripts or graphs differ from the stamp).
#   scripts/check-self-contained.sh     (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { echo "self-contained: $* ($(( $(date +%s) - start )) s)"; }

# A copy in an empty temporary folder: nothing beside it.
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
  # Warnings are not errors here (the regular build has -Werror): under ASan,
  # GCC 12 reports libstdc++'s own <regex> as maybe-uninitialized.
  # -O1: the optimisation level the sanitizers' authors recommend; it builds
  # much faster than -O2 and the sanitized tests are small.
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DIOS_ENABLE_CUDA=OFF -DIOS_SANITIZE=address,undefined -DIOS_WARNINGS_AS_ERRORS=OFF >/dev/null
  cmake --build build -j "$(nproc)" \
    --target ios-optimize ios-run ios_core_tests ios_sched_tests ios_onnx_tests ios_exec_tests >/dev/null
)
step "the copy builds (ASan + UBSan)"
(
  cd "$copy/build"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ctest --output-on-failure -j "$(nproc)" -L 'core|sched|onnx|exec' -E 'matches sequential' >"$tmp/ctest.log" 2>&1 ||
    { cat "$tmp/ctest.log"; exit 1; }
  grep -E 'tests passed|Total Test time' "$tmp/ctest.log"
  grep -q 'RandWire block ws-32-4-0.75-4 matches Table 1' "$tmp/ctest.log" ||
    { echo "self-contained: FAILED: the RandWire Table 1 test did not run" >&2; exit 1; }
  ctest --output-on-failure -j "$(nproc)" -R 'cli: (bad_inputs|hostile_.*|output_files)' \
    >"$tmp/ctest-cli.log" 2>&1 || { cat "$tmp/ctest-cli.log"; exit 1; }
  grep -E 'tests passed|Total Test time' "$tmp/ctest-cli.log"
  cd ..
  build/apps/ios-optimize onnx_models/generated/inception_v3-bdyn.onnx --batch 1 \
    -o schedules/inception_v3.ios.schedule.json --quiet
  test -s schedules/inception_v3.ios.schedule.json
)
step "PASSED: the copy's tests (under ASan + UBSan) and the README's optimize command pass"
