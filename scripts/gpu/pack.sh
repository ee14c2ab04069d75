#!/usr/bin/env bash
# Packs the built programs for a GPU machine that has the NVIDIA driver, CUDA
# and cuDNN (as the nvidia-cudnn-cu13 Python wheel) but none of the Debian
# libraries ios links (protobuf, onnx, spdlog, fmt, sqlite...). Writes
# .devpack/ (git-ignored):
#   bin/    ios-optimize, ios-run, ios_gpu_tests (stripped)
#   lib/    their non-system shared libraries
#   env.sh  sourced there: puts lib/, the wheel's cuDNN and bin/ on the paths
# The working tree travels with it, so scripts/gpu/run-gpu-half.sh and the
# model export scripts are there too. Build first (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.devpack
programs=(build/apps/ios-optimize build/apps/ios-run build/test/ios_gpu_tests)
for p in "${programs[@]}"; do
  [ -x "$p" ] || { echo "pack: $p is missing: run scripts/build.sh first" >&2; exit 2; }
done
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
# Provided on the GPU machine by its driver, CUDA and cuDNN, or by the C runtime.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libgcc_s\.|libstdc\+\+\.|libcuda\.|libcudnn|libcudart|libcublas|libnvrtc|libnvJitLink|libcupti)'
for p in "${programs[@]}"; do
  cp "$p" "$out/bin/"
  strip "$out/bin/$(basename "$p")" 2>/dev/null || true
  ldd "$p" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    if ! [[ "$name" =~ $skip ]]; then cp -L "$path" "$out/lib/$name"; fi
  done
done
cat >"$out/env.sh" <<'ENV'
# Sourced on the GPU machine.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cudnn="$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(os.path.dirname(nvidia.cudnn.__file__), "lib"))' 2>/dev/null || true)"
if [ -z "$cudnn" ]; then
  found="$(find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -name 'libcudnn.so.9' -print 2>/dev/null | head -1)"
  [ -n "$found" ] && cudnn="$(dirname "$found")"
fi
[ -n "$cudnn" ] || echo "devpack: cuDNN 9 not found (pip wheel nvidia-cudnn-cu13 or libcudnn.so.9)" >&2
export LD_LIBRARY_PATH="$here/lib${cudnn:+:$cudnn}:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PATH="$here/bin:$PATH"
ENV
size=$(du -sm "$out" | cut -f1)
echo "pack: $out is ${size} MiB (the trip carries at most 64 MiB with the working tree)"
[ "$size" -lt 60 ] || { echo "pack: too large" >&2; exit 1; }
