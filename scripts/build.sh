#!/usr/bin/env bash
# Configures and builds ios into build/ (Release). CUDA code is built when
# CUDA and cuDNN are found; pass -DIOS_ENABLE_CUDA=OFF to skip it.
#   scripts/build.sh [extra cmake options]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)"
