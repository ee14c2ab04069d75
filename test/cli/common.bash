# Helpers for the command-line tests (sourced, not a test itself).
set -u
: "${IOS_BIN:?set by ctest}" "${IOS_MODELS_DIR:?set by ctest}"
OPT="$IOS_BIN/ios-optimize"
RUN="$IOS_BIN/ios-run"
BAD="$IOS_MODELS_DIR/bad"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0

fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
ok() { passed=$((passed + 1)); }

# expect_error NAME CODE PATTERN -- COMMAND...
# The command must exit with CODE, print exactly one line on stderr that
# matches PATTERN (grep -E), and not crash (no signal exit codes).
expect_error() {
  local name=$1 code=$2 pattern=$3; shift 4
  local err="$WORK/stderr" out="$WORK/stdout" rc=0
  "$@" >"$out" 2>"$err" || rc=$?
  if [ "$rc" != "$code" ]; then
    fail "$name: exit code $rc, expected $code; stderr: $(head -c 400 "$err")"; return
  fi
  local lines; lines=$(grep -c . "$err" || true)
  if [ "$lines" != 1 ]; then fail "$name: $lines lines on stderr, expected one: $(head -c 600 "$err")"; return; fi
  if ! grep -qE -- "$pattern" "$err"; then fail "$name: stderr does not match '$pattern': $(cat "$err")"; return; fi
  ok
}

# expect_ok NAME -- COMMAND...
expect_ok() {
  local name=$1; shift 2
  local rc=0
  "$@" >"$WORK/stdout" 2>"$WORK/stderr" || rc=$?
  if [ "$rc" != 0 ]; then fail "$name: exit code $rc; stderr: $(tail -c 600 "$WORK/stderr")"; return 1; fi
  ok
}

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ]
}

# limited COMMAND...: runs COMMAND within 10 s and 2 GiB, the bounds every
# hostile input must be answered in. ASan reserves terabytes of address
# space: under it the 2 GiB limit is its own hard_rss_limit_mb instead of
# ulimit -v, and $asan is true (tests that need ulimit -v skip then).
asan=false
memory_limit=$((2 * 1024 * 1024))
if grep -qa AddressSanitizer "$OPT" || ldd "$OPT" 2>/dev/null | grep -q libasan; then
  asan=true
  memory_limit=unlimited
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}:hard_rss_limit_mb=2048"
fi
limited() { (ulimit -v "$memory_limit"; exec timeout -s KILL 10 "$@"); }
