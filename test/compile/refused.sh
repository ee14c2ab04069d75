# Builds one target of the build tree and succeeds only when the compiler
# refuses it with the diagnostic expected: run under ctest's WILL_FAIL, this
# script's failure (exit 1) is the test's pass, and a target that compiles,
# or fails for another reason, makes the test fail.
#   refused.sh BUILD_DIR TARGET PATTERN
set -u
build_dir=$1 target=$2 pattern=$3
out=$(cmake --build "$build_dir" --target "$target" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
  echo "$target compiled; it must be refused ($pattern)"
  exit 0
fi
if ! grep -qE -- "$pattern" <<<"$out"; then
  echo "$target was refused, but not for the expected reason ($pattern):"
  echo "$out" | tail -40
  exit 0
fi
echo "$target refused as expected:"
grep -E -- "$pattern" <<<"$out" | head -5
exit 1
