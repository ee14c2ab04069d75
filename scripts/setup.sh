#!/usr/bin/env bash
# Installs everything ios needs on a fresh Debian 12 machine and generates the
# ONNX models the default run and the tests use. Safe to run again: each step
# is skipped when already done.
#
#   scripts/setup.sh            system packages, npm packages, models
#   IOS_SKIP_APT=1 scripts/setup.sh   (when the packages are known present)
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: build tools, libraries, and the Python used to export models.
packages=(cmake ninja-build g++ pkg-config
  libprotobuf-dev protobuf-compiler libonnx-dev libcli11-dev libspdlog-dev
  libfmt-dev nlohmann-json3-dev catch2 libsqlite3-dev libonnx-testdata
  python3 python3-torch python3-torchvision python3-onnx python3-numpy python3-matplotlib
  python3-dev pybind11-dev libdlpack-dev python3-pytest  # the Python module ios and its tests
  nodejs npm
  help2man graphviz man-db bash-completion  # man pages at build time; schedule pictures; their tests
  patchelf                                  # the GPU kit's programs find their libraries by RPATH
  chromium)                                 # the --html page is tested in a headless browser
if [ "${IOS_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    # nodejs/npm may come from elsewhere on the machine; only install if absent.
    if command -v node >/dev/null && command -v npm >/dev/null; then
      missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
    fi
    read -r -a missing <<<"${missing[*]}"
    if [ ${#missing[@]} -gt 0 ]; then
      echo "setup: installing ${missing[*]}"
      sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
      $sudo_cmd apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
  fi
fi

# ONNX Runtime (CPU) for the numerical oracle. --ignore-scripts: the package's
# install script downloads GPU binaries, which fails offline; the CPU build
# ships inside the package.
if [ ! -d node_modules/onnxruntime-node ] && [ -f package.json ]; then
  echo "setup: npm install (onnxruntime-node)"
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 2>/dev/null ||
    npm install --ignore-scripts --no-audit --no-fund --loglevel=error
fi

# Models: exported with Debian's PyTorch, deterministic (fixed seed).
scripts/make-models.sh
