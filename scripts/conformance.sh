#!/usr/bin/env bash
# Runs ONNX's backend node tests and its PyTorch suites (Debian package
# libonnx-testdata) through
# ios-optimize and ios-run after scripts/build.sh; see docs/testing.md.
#
#   scripts/conformance.sh                 run, print failures and the totals
#   scripts/conformance.sh --write-docs    also regenerate docs/operators.md
#   scripts/conformance.sh -v --filter gemm   one line per test, a subset
#
# The test suite runs the same check (ctest -L conformance), which also
# fails when docs/operators.md is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${IOS_BUILD_DIR:-build}
args=()
for a in "$@"; do
  if [ "$a" = --write-docs ]; then args+=(--write-docs docs/operators.md); else args+=("$a"); fi
done
bin="$build/test/ios_conformance"
[ -x "$bin" ] || { echo "conformance: $bin is missing; run scripts/build.sh first" >&2; exit 2; }
suites=/usr/share/libonnx-testdata/data
exec "$bin" --suite "$suites/pytorch-converted" --suite "$suites/pytorch-operator" --known-limitations test/conformance/known_limitations.txt \
  --jobs "$(nproc)" "${args[@]}"
