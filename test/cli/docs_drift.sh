# The documentation's generated parts and lists match the code
# (tools/doc_drift.py says what it compares and how to refresh).
source "$(dirname "$0")/common.bash"
: "${IOS_SOURCE_DIR:?set by ctest}"
if /usr/bin/python3 "$IOS_SOURCE_DIR/tools/doc_drift.py" check "$IOS_BIN" "$IOS_MODELS_DIR" >"$WORK/drift.txt" 2>&1; then
  ok
else
  fail "documentation drifted from the code:"
  cat "$WORK/drift.txt"
fi
finish
