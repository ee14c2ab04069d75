#!/usr/bin/env bash
# scripts/check-boundaries.py on small made-up projects: a clean one passes,
# and each rule it enforces fails on a project that breaks only that rule
# (a module cycle, an include of an unlinked module, a public header's
# include without its module linked, a link nothing includes, a PRIVATE link
# that a header needs, a source in no target, a relative include into
# another module), with the line that names the problem.
# With IOS_MODULE_GRAPH set, the real build's graph must pass too.
set -u
CHECK="${IOS_SOURCE_DIR:?set by ctest}/scripts/check-boundaries.py"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
ok() { passed=$((passed + 1)); }

# A project with modules core <- ir <- sched and a program using sched.
# `graph` is the module_graph.tsv CMake would write for it; each case edits
# files or the graph and runs the check.
make_project() {
  rm -rf "$WORK/p" && mkdir -p "$WORK/p/lib/core" "$WORK/p/lib/ir" "$WORK/p/lib/sched" "$WORK/p/apps"
  local p="$WORK/p"
  printf '#pragma once\nint core();\n' >"$p/lib/core/core.h"
  printf '#include "core/core.h"\nint core() { return 1; }\n' >"$p/lib/core/core.cpp"
  printf '#pragma once\n#include "core/core.h"\nint ir();\n' >"$p/lib/ir/ir.h"
  printf '#include "ir/ir.h"\nint ir() { return core(); }\n' >"$p/lib/ir/ir.cpp"
  printf '#pragma once\nint sched();\n' >"$p/lib/sched/sched.h"
  printf '#include "sched/sched.h"\n#include "ir/ir.h"\nint sched() { return ir(); }\n' >"$p/lib/sched/sched.cpp"
  printf '#include "sched/sched.h"\nint main() { return sched(); }\n' >"$p/apps/main.cpp"
  local T=$'\t'
  cat >"$p/graph.tsv" <<TSV
target${T}ios_core${T}STATIC_LIBRARY${T}core${T}$p/lib
source${T}ios_core${T}$p/lib/core/core.cpp
target${T}ios_ir${T}STATIC_LIBRARY${T}ir${T}$p/lib
source${T}ios_ir${T}$p/lib/ir/ir.cpp
link${T}ios_ir${T}ios_core${T}PUBLIC
target${T}ios_sched${T}STATIC_LIBRARY${T}sched${T}$p/lib
source${T}ios_sched${T}$p/lib/sched/sched.cpp
link${T}ios_sched${T}ios_ir${T}PRIVATE
target${T}app${T}EXECUTABLE${T}-${T}$p/apps
source${T}app${T}$p/apps/main.cpp
link${T}app${T}ios_sched${T}PRIVATE
TSV
}

# expect_violation NAME PATTERN: the check exits 1 and prints a line matching PATTERN.
expect_violation() {
  local name=$1 pattern=$2 rc=0
  python3 "$CHECK" --root "$WORK/p" "$WORK/p/graph.tsv" >"$WORK/out" 2>"$WORK/err" || rc=$?
  if [ "$rc" != 1 ]; then fail "$name: exit code $rc, expected 1: $(cat "$WORK/out" "$WORK/err")"; return; fi
  grep -qE -- "$pattern" "$WORK/out" && ok || fail "$name: no line matches '$pattern': $(cat "$WORK/out")"
}

make_project
if python3 "$CHECK" --root "$WORK/p" "$WORK/p/graph.tsv" >"$WORK/out" 2>&1; then ok
else fail "clean project: $(cat "$WORK/out")"; fi

# The cycle this check was written against: a lower module's header
# includes a higher module's header, and the lower module links it back.
make_project
printf '#pragma once\n#include "sched/sched.h"\nint ir();\n' >"$WORK/p/lib/ir/ir.h"
printf 'link\tios_ir\tios_sched\tPUBLIC\n' >>"$WORK/p/graph.tsv"
expect_violation "cycle" '^module cycle: ios_ir -> ios_sched -> ios_ir'

make_project  # a cycle of three: core's source includes sched
printf 'link\tios_core\tios_sched\tPRIVATE\n' >>"$WORK/p/graph.tsv"
printf '#include "core/core.h"\n#include "sched/sched.h"\nint core() { return 1; }\n' >"$WORK/p/lib/core/core.cpp"
expect_violation "cycle of three" '^module cycle: ios_core -> ios_sched -> ios_ir -> ios_core;'

make_project  # sched.cpp uses core, which it sees only through ir
printf '#include "sched/sched.h"\n#include "ir/ir.h"\n#include "core/core.h"\nint sched() { return ir(); }\n' >"$WORK/p/lib/sched/sched.cpp"
expect_violation "include of an unlinked module" '^lib/sched/sched.cpp:3: ios_sched includes a header of ios_core .* does not link it'

make_project  # the program includes ir while linking only sched
printf '#include "sched/sched.h"\n#include "ir/ir.h"\nint main() { return sched(); }\n' >"$WORK/p/apps/main.cpp"
expect_violation "program includes an unlinked module" '^apps/main.cpp:2: app includes a header of ios_ir'

make_project
printf 'link\tios_sched\tios_core\tPRIVATE\n' >>"$WORK/p/graph.tsv"
expect_violation "link without include" '^ios_sched links ios_core but none of its files includes'

make_project  # sched.h includes ir, but sched links ir PRIVATE
printf '#pragma once\n#include "ir/ir.h"\nint sched();\n' >"$WORK/p/lib/sched/sched.h"
expect_violation "header needs a PRIVATE link" '^lib/sched/sched.h:2: a header of ios_sched includes ios_ir but .* PRIVATE'

make_project
printf 'int forgotten() { return 0; }\n' >"$WORK/p/lib/ir/forgotten.cpp"
expect_violation "source in no target" '^lib/ir/forgotten.cpp is in no target'

make_project
printf '#include "sched/sched.h"\n#include "../ir/ir.h"\nint sched() { return ir(); }\n' >"$WORK/p/lib/sched/sched.cpp"
expect_violation "relative include into another module" '^lib/sched/sched.cpp:2: includes ../ir/ir.h by a relative path'

# A public header (include/ios/error.h, core's) counts as its module's: a
# program that includes it links core itself, and then passes.
make_project
mkdir -p "$WORK/p/include/ios"
printf '#pragma once\nclass Error {};\n' >"$WORK/p/include/ios/error.h"
printf '#include "sched/sched.h"\n#include "ios/error.h"\nint main() { return sched(); }\n' >"$WORK/p/apps/main.cpp"
expect_violation "a public header of a module not linked" '^apps/main.cpp:2: app includes a header of ios_core'
printf 'link\tapp\tios_core\tPRIVATE\n' >>"$WORK/p/graph.tsv"
if python3 "$CHECK" --root "$WORK/p" "$WORK/p/graph.tsv" >"$WORK/out" 2>&1; then ok
else fail "a public header of a linked module: $(cat "$WORK/out")"; fi

# A graph file that is not one: exit 2, not a pass.
printf 'garbage\n' >"$WORK/bad.tsv"
rc=0; python3 "$CHECK" --root "$WORK/p" "$WORK/bad.tsv" >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] && ok || fail "a malformed graph file: exit code $rc, expected 2"

if [ -n "${IOS_MODULE_GRAPH:-}" ]; then
  if python3 "$CHECK" "$IOS_MODULE_GRAPH" >"$WORK/out" 2>&1; then ok
  else fail "this build's module graph: $(cat "$WORK/out")"; fi
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
