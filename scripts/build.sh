#!/usr/bin/env bash
# Configures and builds ios into build/ (Release). CUDA code is built when
# CUDA and cuDNN are found; pass -DIOS_ENABLE_CUDA=OFF to skip it.
# Warnings are errors here as in scripts/test.sh: both configure the same
# flags, so running the tests after a build recompiles nothing (a compiler
# that warns where Debian 12's does not: pass -DIOS_WARNINGS_AS_ERRORS=OFF).
#   scripts/build.sh [extra cmake options]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIOS_WARNINGS_AS_ERRORS=ON "$@" >/dev/null
cmake --build build -j "$(nproc)"
