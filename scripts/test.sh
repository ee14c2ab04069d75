#!/usr/bin/env bash
# The whole test suite from a fresh machine: setup, build (with warnings as
# errors, the flags scripts/build.sh always configures: after README's first
# command nothing is compiled again), then the module-boundary check on the
# configured target graph (scripts/check-boundaries.py, well under a
# second), then ctest (GPU tests
# are reported as skipped where no GPU exists).
# Then scripts/check-self-contained.sh: a copy of the checkout with nothing
# beside it builds under AddressSanitizer + UBSan and passes the parser,
# schedule-file and hostile-input tests there (IOS_SKIP_SANITIZE=1 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
scripts/check-boundaries.py build/module_graph.tsv
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
if [ "${IOS_SKIP_SANITIZE:-0}" != 1 ]; then
  scripts/check-self-contained.sh
fi
