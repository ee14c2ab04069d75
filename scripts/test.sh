#!/usr/bin/env bash
# The whole test suite from a fresh machine: setup, build with warnings as
# errors, then ctest; then the host tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer (scripts/sanitize.sh; IOS_SKIP_SANITIZE=1 skips
# that step). GPU tests are reported as skipped where no GPU exists. Then
# proves that a copy of the checkout with nothing beside it builds and passes
# (scripts/check-self-contained.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DIOS_WARNINGS_AS_ERRORS=ON
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
if [ "${IOS_SKIP_SANITIZE:-0}" != 1 ]; then
  scripts/sanitize.sh
fi
scripts/check-self-contained.sh
