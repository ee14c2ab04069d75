# The examples (examples/), as CI runs them from a clean clone: a torchvision
# model (SqueezeNet 1.1 at 64x64) exported with the repo's exporter, then
# optimized and run through ios from C++ (examples/cpp, a project built
# against the installed package) and from Python (examples/python, with the
# build tree's module); each output must match PyTorch's by the accuracy
# rule of the model-family tests (examples/torchvision_export.py).
source "$(dirname "$0")/common.bash"
build_dir="$IOS_BIN/.."
python=/usr/bin/python3  # Debian's, which has torch and which the module is built for

stem=""
if expect_ok "export squeezenet1_1 at 64x64" -- "$python" "$IOS_SOURCE_DIR/examples/torchvision_export.py" \
     squeezenet1_1 --image-size 64x64 --out-dir "$WORK/models"; then
  stem=$(tail -1 "$WORK/stdout")
  [ -f "$stem.onnx" ] && [ -f "$stem.torch.npy" ] && [ -f "$stem.truth.npy" ] && ok ||
    fail "the export wrote no $stem.onnx / .torch.npy / .truth.npy"
fi

# C++: install, build the example against the prefix, run it.
prefix="$WORK/prefix"
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
example="$WORK/cpp"
if [ -n "$stem" ] &&
   expect_ok "cmake --install" -- cmake --install "$build_dir" --prefix "$prefix" &&
   expect_ok "configure the C++ example against $prefix" -- \
     cmake -S "$IOS_SOURCE_DIR/examples/cpp" -B "$example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
           -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" &&
   expect_ok "build the C++ example" -- cmake --build "$example"; then
  if expect_ok "C++ example: optimize and run" -- "$example/torchvision_example" "$stem"; then
    grep -q "^PASSED" "$WORK/stdout" && ok || fail "C++ example: $(cat "$WORK/stdout")"
    [ -f "$stem.ios.schedule.json" ] && ok || fail "C++ example: no schedule saved"
  fi
fi

# Python: the package from the build tree; the ONNX route (export,
# ios.optimize, ios.Engine) and the one-liner (ios.compile).
if compgen -G "$build_dir/python/ios/_ios.*.so" >/dev/null; then
  if expect_ok "Python example: export, optimize and run" -- env PYTHONPATH="$build_dir/python" "$python" \
       "$IOS_SOURCE_DIR/examples/python/torchvision_example.py" --out-dir "$WORK/python"; then
    grep -q "^PASSED" "$WORK/stdout" && ok || fail "Python example: $(cat "$WORK/stdout")"
  fi
  if expect_ok "Python example: ios.compile" -- env PYTHONPATH="$build_dir/python" "$python" \
       "$IOS_SOURCE_DIR/examples/python/compile_example.py"; then
    grep -q "^PASSED" "$WORK/stdout" && ok || fail "Python example ios.compile: $(cat "$WORK/stdout")"
  fi
else
  fail "the Python module is not built (cmake: python3-dev, pybind11-dev, libdlpack-dev; scripts/setup.sh)"
fi
# docs/api.md shows the Python examples as CI runs them: every block of
# examples/python between "# [docs/api.md: TITLE]" and "# [end]" is in it
# verbatim (dedented), so the page cannot drift from the code that runs.
blocks=0
for example in "$IOS_SOURCE_DIR"/examples/python/*.py; do
  if out=$("$python" - "$example" "$IOS_SOURCE_DIR/docs/api.md" <<'PY'
import re, sys, textwrap
source, docs = open(sys.argv[1]).read(), open(sys.argv[2]).read()
blocks = re.findall(r"\n([ \t]*)# \[docs/api\.md: ([^\]]+)\]\n(.*?)\n[ \t]*# \[end\]", source, re.S)
for indent, title, body in blocks:
    if textwrap.dedent(body) not in docs:
        print(f"its block '{title}' is not in docs/api.md as written:\n{textwrap.dedent(body)}")
        sys.exit(1)
print(len(blocks))
PY
  ); then
    blocks=$((blocks + out))
    ok
  else
    fail "$(basename "$example"): $out"
  fi
done
[ "$blocks" -ge 2 ] && ok || fail "docs/api.md: $blocks example blocks checked, expected the ONNX route and ios.compile"
finish
