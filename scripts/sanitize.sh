#!/usr/bin/env bash
# The host test suite under AddressSanitizer + UndefinedBehaviorSanitizer
# (-fno-sanitize-recover: the first report fails the test). Builds without
# CUDA into build-asan/ (GCC, RelWithDebInfo) and runs every test except the
# ones listed below, which exercise the same code as others at a scale that
# takes minutes under the sanitizers (docs/testing.md has the timings).
#   scripts/sanitize.sh [extra ctest options]
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# Warnings are not errors here (the regular build has -Werror): under ASan,
# GCC 12 reports libstdc++'s own <regex> (inside Catch2) as maybe-uninitialized.
# No Python module: an ASan-instrumented module cannot be loaded into an
# uninstrumented python3 (the ASan runtime must come first).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIOS_ENABLE_CUDA=OFF \
  -DIOS_SANITIZE=address,undefined -DIOS_WARNINGS_AS_ERRORS=OFF -DIOS_BUILD_PYTHON=OFF >/dev/null
cmake --build build-asan -j "$(nproc)"
built=$(date +%s)
# Left out: the whole-model ONNX Runtime comparisons and every-scheduler runs
# on the six torchvision CNNs, NASNet-A and RandWire (the same kernels and
# schedulers run on small models in other tests), the shipped-model CLI sweep
# and the large-model timing test (its limit is for optimized builds); the
# examples, which need the Python module.
skip='ONNX Runtime|matches sequential|shipped_models|large_models|gpu: |cli: examples'
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd build-asan
ctest --output-on-failure -j "$(nproc)" -E "$skip" "$@"
echo "sanitize: build $((built - start)) s, tests $(( $(date +%s) - built )) s"
