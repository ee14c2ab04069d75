# Pictures of schedules (--dot, rendered by Graphviz), progress on a
# terminal, and the search benchmark on a symbolic-batch model.
source "$(dirname "$0")/common.bash"
PY=/usr/bin/python3
inception="$IOS_MODELS_DIR/inception_v3-bdyn.onnx"
[ -f "$inception" ] || { echo "FAIL: $inception missing: run scripts/setup.sh"; exit 1; }
command -v dot >/dev/null || { echo "FAIL: Graphviz's dot is missing (scripts/setup.sh installs graphviz)"; exit 1; }

# check_dot DOT SCHEDULE: dot accepts the file; its clusters are the
# schedule's stages (merge stages marked) or streams, and every unit is a node.
check_dot() {
  local file=$1 schedule=$2
  dot -Tsvg "$file" -o "$WORK/check.svg" 2>"$WORK/dot.err" || { fail "dot -Tsvg $file: $(cat "$WORK/dot.err")"; return; }
  grep -q "<svg" "$WORK/check.svg" || { fail "dot made no SVG of $file"; return; }
  $PY - "$file" "$schedule" <<'PYEOF' || fail "$file does not draw $schedule"
import json, re, sys
dot, s = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
labels = re.findall(r'^    u\d+ \[label="((?:[^"\\]|\\.)*)\\n', dot, re.M)
if s["form"] == "staged":
    units = [u for st in s["stages"] for g in st["groups"] for u in g]
    clusters = re.findall(r"subgraph cluster_stage(\d+)", dot)
    assert len(clusters) == len(s["stages"]), (len(clusters), len(s["stages"]))
    merges = sum(st["strategy"] == "merge" for st in s["stages"])
    assert dot.count("operator merge") == merges, (dot.count("operator merge"), merges)
    assert dot.count('xlabel="merged"') == sum(len(st["groups"][0]) for st in s["stages"] if st["strategy"] == "merge")
else:
    units = [l["unit"] for l in s["launches"]]
    streams = {l["stream"] for l in s["launches"]}
    assert len(re.findall(r'label="stream \d+"', dot)) == len(streams)
assert sorted(l.replace('\\"', '"') for l in labels) == sorted(units), "units differ"
assert dot.count(" -> ") > 0
PYEOF
}

expect_ok "ios --dot" -- "$OPT" "$inception" --batch 1 -o "$WORK/ios.json" --dot "$WORK/ios.dot" --quiet
check_dot "$WORK/ios.dot" "$WORK/ios.json" && ok
grep -q "operator merge" "$WORK/ios.dot" && ok || fail "Inception V3's IOS schedule shows no merge stage"
expect_ok "lios --dot" -- "$OPT" "$inception" --batch 1 --scheduler lios -o "$WORK/lios.json" --dot "$WORK/lios.dot" --quiet
check_dot "$WORK/lios.dot" "$WORK/lios.json" && ok
# From a saved schedule, and as SVG rendered by dot.
expect_ok "ios-run --dot" -- "$RUN" "$inception" "$WORK/ios.json" --dry-run --dot "$WORK/run.dot"
check_dot "$WORK/run.dot" "$WORK/ios.json" && ok
diff <(grep -v "^  label=" "$WORK/ios.dot") <(grep -v "^  label=" "$WORK/run.dot") >/dev/null && ok ||
  fail "ios-run draws the saved schedule differently from ios-optimize"
expect_ok "--dot FILE.svg" -- "$RUN" "$inception" "$WORK/ios.json" --dry-run --dot "$WORK/run.svg"
head -c 300 "$WORK/run.svg" | grep -q "<?xml" && grep -q "</svg>" "$WORK/run.svg" && ok || fail "run.svg is not SVG"
expect_error "--dot with two schedules" 2 "--dot draws one schedule but 2 are given" -- "$RUN" "$inception" "$WORK/ios.json" "$WORK/lios.json" --dry-run --dot "$WORK/two.dot"
[ ! -e "$WORK/two.dot" ] && ok || fail "a refused --dot wrote a file"
expect_error "--dot .svg without dot" 2 "needs Graphviz's 'dot'" -- env PATH=/nonexistent "$OPT" "$inception" --batch 1 -o "$WORK/x.json" --dot "$WORK/x.svg" --quiet
[ ! -e "$WORK/x.svg" ] && ok || fail "a failed render left $WORK/x.svg"

# --html: one page with the summary, the picture and the block table, as a
# real browser (headless Chromium) parses it: the serialized DOM has the SVG
# with one node per unit and a table row per block.
expect_ok "--html" -- "$OPT" "$inception" --batch 1 -o "$WORK/h.json" --html "$WORK/report.html" --report-json "$WORK/h-report.json" --quiet
if command -v chromium >/dev/null; then
  timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$WORK/chromium" \
    --dump-dom "file://$WORK/report.html" >"$WORK/dom.html" 2>"$WORK/chromium.err" ||
    fail "chromium could not load the page: $(tail -3 "$WORK/chromium.err")"
  $PY - "$WORK/dom.html" "$WORK/h-report.json" <<'PYEOF' && ok || fail "the page as Chromium parsed it lacks the picture or the table"
import json, re, sys
dom, r = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
# The browser's own serialization: tables gain a <tbody>, the SVG is in the DOM.
blocks = re.search(r'<table id="blocks">\s*<tbody>(.*?)</tbody>\s*</table>', dom, re.S)
assert blocks, "no parsed blocks table"
assert blocks.group(1).count("<tr>") == len(r["blocks"]) + 1, (blocks.group(1).count("<tr>"), len(r["blocks"]))
# Every block of Inception V3 is searched completely within the default limit;
# Mixed_6d repeats Mixed_6c (block 7 of block 6) and reuses its search.
assert "<th>search</th>" in blocks.group(1)
assert blocks.group(1).count("<td class=\"text\">complete") == len(r["blocks"]), blocks.group(1)[:2000]
repeats = [b for b in r["blocks"] if "same_as" in b]
assert [(b["index"], b["same_as"]) for b in repeats] == [(7, 6)], repeats
assert blocks.group(1).count("<td class=\"text\">complete, as block 6</td>") == 1, blocks.group(1)[:2000]
svg = re.search(r"<svg .*?</svg>", dom, re.S)
assert svg, "no SVG element"
assert svg.group(0).count('class="node"') == r["units"], (svg.group(0).count('class="node"'), r["units"])
assert "ios-optimize: " in re.search(r"<title>(.*?)</title>", dom).group(1)
PYEOF
else
  fail "chromium is not installed (scripts/setup.sh installs it)"
fi
expect_error "--html without dot" 2 "needs Graphviz's 'dot'" -- env PATH=/nonexistent "$OPT" "$inception" --batch 1 -o "$WORK/y.json" --html "$WORK/y.html" --quiet
[ ! -e "$WORK/y.html" ] && ok || fail "a failed --html left a file"

# Progress: on a terminal (script(1) gives the program one), not in a pipe
# or with --quiet. Stdout holds the summary only either way. script reads
# its stdin for the terminal: /dev/null, so a closed stdin (CI) cannot end it early.
if command -v script >/dev/null; then
  script -qec "'$OPT' '$inception' --batch 1 -o '$WORK/p.json' 2>'$WORK/tty.err' >/dev/null" /dev/null </dev/null >/dev/null
  # The child's stderr went to a file, so it is not a terminal there:
  grep -q "blocks searched" "$WORK/tty.err" && fail "progress shown on a redirected stderr" || ok
  script -qec "'$OPT' '$inception' --batch 1 -o '$WORK/p.json' >/dev/null" /dev/null </dev/null >"$WORK/tty.out"
  grep -q "\[import\] .*inception_v3-bdyn.onnx" "$WORK/tty.out" && ok || fail "no import progress on a terminal: $(cat -v "$WORK/tty.out" | head -c 600)"
  # 12 of Inception's 13 blocks are searched: Mixed_6d repeats Mixed_6c.
  grep -qE "\[ios\] 12/12 blocks searched, [0-9.]+ s, ETA [0-9]+ s" "$WORK/tty.out" && ok ||
    fail "no block progress on a terminal: $(cat -v "$WORK/tty.out" | head -c 600)"
  script -qec "'$OPT' '$inception' --batch 1 -o '$WORK/p.json' --quiet" /dev/null </dev/null >"$WORK/quiet.out"
  grep -q "blocks searched\|\[import\]" "$WORK/quiet.out" && fail "progress shown with --quiet" || ok
  expect_ok "progress-free pipe" -- "$OPT" "$inception" --batch 1 -o "$WORK/p.json"
  grep -q "blocks searched\|\[import\]" "$WORK/stderr" && fail "progress shown in a pipe" || ok
else
  fail "script(1) is missing (util-linux)"
fi

# The search benchmark takes the exported models (symbolic batch) as they are.
bench="$IOS_BIN/../bench/ios-bench-search"
if [ -x "$bench" ]; then
  expect_ok "ios-bench-search on a -bdyn model" -- "$bench" --model "$inception" --repeat 1
  grep -q "inception_v3-bdyn.onnx (batch 1): import" "$WORK/stdout" && grep -q "predicted" "$WORK/stdout" && ok ||
    fail "ios-bench-search did not run the model: $(cat "$WORK/stdout")"
  expect_ok "ios-bench-search --batch 2" -- "$bench" --model "$inception" --batch 2 --repeat 1
  grep -q "(batch 2): import" "$WORK/stdout" && ok || fail "ios-bench-search --batch 2: $(cat "$WORK/stdout")"
else
  fail "$bench not built"
fi
finish
