#!/usr/bin/env python3
"""Module boundaries: fails on an include cycle between library targets and
on a file that includes a header of a module its target does not link.

Reads the target graph that CMake writes when it configures the project
(<build>/module_graph.tsv, cmake/ModuleGraph.cmake): every library and
program target with its sources, its links and, for the modules of lib/, the
folder its headers live in (a module's include is "<folder>/x.h"). Then it
reads every source of every target, every header of every module, and the
project's own helper headers those include, and requires:

  1. no cycle among the modules' links (with rule 2, no include cycle);
  2. a file that includes "<folder>/x.h" of module M belongs to M or to a
     target that links M directly (not only through another module);
  3. a target links a module directly only if one of its files includes it;
  4. a module whose headers include module M links M PUBLIC (its dependents
     compile those headers);
  5. every .cpp/.cu in a module's source folder is in some target's sources
     (the source lists are explicit; a forgotten file is an error, not a
     silently missing symbol).

Usage: check-boundaries.py [--root DIR] [BUILD_DIR/module_graph.tsv]
  (defaults: the checkout this script is in, build/module_graph.tsv)
Exit 0 when all hold, 1 with one line per violation, 2 on unusable input.
"""

import argparse
import os
import re
import sys
from collections import defaultdict

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = (".cpp", ".cu")
# include/ios/<name>.h, the public API, by the header folder of the module
# that implements it (a program that includes one links that module).
PUBLIC_HEADERS = {"ios/error.h": "core", "ios/engine.h": "engine"}


class Target:
    def __init__(self, name, kind, folder, source_dir):
        self.name = name
        self.kind = kind
        self.folder = None if folder == "-" else folder
        self.source_dir = source_dir
        self.sources = []
        self.links = {}  # linked item -> PUBLIC | PRIVATE


def read_graph(path):
    targets = {}
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        print(f"check-boundaries: cannot read {path}: {e.strerror}", file=sys.stderr)
        sys.exit(2)
    for number, line in enumerate(lines, 1):
        fields = line.split("\t")
        try:
            if fields[0] == "target" and len(fields) == 5:
                targets[fields[1]] = Target(*fields[1:])
            elif fields[0] == "source" and len(fields) == 3:
                targets[fields[1]].sources.append(fields[2])
            elif fields[0] == "link" and len(fields) == 4 and fields[3] in ("PUBLIC", "PRIVATE"):
                targets[fields[1]].links[fields[2]] = fields[3]
            else:
                raise ValueError
        except (KeyError, ValueError, TypeError):
            print(f"check-boundaries: {path}:{number}: not a module-graph line: {line!r}",
                  file=sys.stderr)
            sys.exit(2)
    return targets


def includes_of(path):
    result = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m:
                    result.append((number, m.group(1)))
    except OSError:
        pass  # a generated or missing file: the compiler reports it
    return result


def inside(path, folder):
    return os.path.commonpath([path, folder]) == folder


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graph", nargs="?", help="module_graph.tsv (default build/module_graph.tsv)")
    parser.add_argument("--root", help="the checkout (default: the one holding this script)")
    args = parser.parse_args()
    root = os.path.realpath(args.root or os.path.join(os.path.dirname(__file__), ".."))
    lib = os.path.join(root, "lib")
    graph_path = args.graph or os.path.join(root, "build", "module_graph.tsv")
    if not os.path.isfile(graph_path):
        print(f"check-boundaries: {graph_path} does not exist; configure the build first "
              f"(scripts/build.sh or cmake -S . -B build)", file=sys.stderr)
        return 2
    targets = read_graph(graph_path)

    modules = {t.name: t for t in targets.values() if t.folder}
    owner = {}  # header folder -> module
    for m in modules.values():
        if m.folder in owner:
            print(f"check-boundaries: modules {owner[m.folder]} and {m.name} both own lib/{m.folder}",
                  file=sys.stderr)
            return 2
        owner[m.folder] = m.name

    problems = []
    rel = lambda p: os.path.relpath(p, root)

    def resolve(including, spelled):
        """(module, None) for a module header, (None, path) for a project file, else (None, None)."""
        first, _, rest = spelled.partition("/")
        if rest and first in owner and os.path.isfile(os.path.join(lib, first, rest)):
            return owner[first], None
        # The public headers (include/ios/): each belongs to the module that
        # implements it.
        if spelled in PUBLIC_HEADERS and PUBLIC_HEADERS[spelled] in owner and \
                os.path.isfile(os.path.join(root, "include", spelled)):
            return owner[PUBLIC_HEADERS[spelled]], None
        # The compiler tries the including file's folder, then the include
        # path; the project's non-module include folders (test/) are
        # ancestors of the files that use them.
        folder = os.path.dirname(including)
        while inside(folder, root):
            candidate = os.path.normpath(os.path.join(folder, spelled))
            if os.path.isfile(candidate):
                return None, candidate
            if folder == root:
                break
            folder = os.path.dirname(folder)
        return None, None

    checked_includes = 0
    for t in sorted(targets.values(), key=lambda t: t.name):
        files = [os.path.realpath(s) for s in t.sources if inside(os.path.realpath(s), root)]
        own_folder = os.path.join(lib, t.folder) if t.folder else None
        if own_folder:
            files += sorted(os.path.join(own_folder, f) for f in os.listdir(own_folder) if f.endswith(".h"))
        used = defaultdict(list)         # module -> [(file, line)]
        from_headers = defaultdict(list)  # module -> [(header, line)] for rule 4
        seen = set()
        while files:
            path = files.pop()
            if path in seen:
                continue
            seen.add(path)
            for number, spelled in includes_of(path):
                module, local = resolve(path, spelled)
                if module:
                    checked_includes += 1
                    if module != t.name:
                        used[module].append((path, number))
                        if own_folder and path.endswith(".h") and inside(path, own_folder):
                            from_headers[module].append((path, number))
                elif local and not (own_folder and inside(local, own_folder)):
                    if any(inside(local, os.path.join(lib, f)) for f in owner):
                        problems.append(f"{rel(path)}:{number}: includes {spelled} by a relative path; "
                                        f"write the module's folder (\"<folder>/x.h\") instead")
                    else:
                        files.append(local)  # a helper header of the target's own (test/...)
        for module, places in sorted(used.items()):
            if module not in t.links:
                path, number = places[0]
                problems.append(f"{rel(path)}:{number}: {t.name} includes a header of {module} "
                                f"(\"{modules[module].folder}/...\") but does not link it; add "
                                f"{module} to {t.name}'s target_link_libraries, or drop the include")
        for link in sorted(t.links):
            if link in modules and link not in used:
                problems.append(f"{t.name} links {link} but none of its files includes a header of it; "
                                f"remove the link (a target links only what it includes)")
        for module, places in sorted(from_headers.items()):
            if t.links.get(module) == "PRIVATE":
                path, number = places[0]
                problems.append(f"{rel(path)}:{number}: a header of {t.name} includes {module} but "
                                f"{t.name} links it PRIVATE; make the link PUBLIC")

    # Rule 1: cycles among the modules' direct links.
    state = {}
    stack = []

    def visit(name):
        state[name] = "open"
        stack.append(name)
        for link in sorted(modules[name].links):
            if link not in modules:
                continue
            if state.get(link) == "open":
                cycle = stack[stack.index(link):] + [link]
                problems.append("module cycle: " + " -> ".join(cycle) +
                                "; move the shared interface into the lower module")
            elif link not in state:
                visit(link)
        stack.pop()
        state[name] = "done"

    for name in sorted(modules):
        if name not in state:
            visit(name)

    # Rule 5: every source file of a module's folder is built by some target.
    listed = {os.path.realpath(s) for t in targets.values() for s in t.sources}
    source_folders = {os.path.dirname(os.path.realpath(s)) for m in modules.values() for s in m.sources}
    for folder in sorted(f for f in source_folders if inside(f, lib)):
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.endswith(SOURCE_SUFFIXES) and path not in listed:
                problems.append(f"{rel(path)} is in no target's sources; add it to its module's "
                                f"SOURCES in lib/CMakeLists.txt")

    for p in problems:
        print(p)
    if problems:
        print(f"check-boundaries: {len(problems)} problem(s) in {len(targets)} targets "
              f"({len(modules)} modules)", file=sys.stderr)
        return 1
    print(f"check-boundaries: {len(targets)} targets, {len(modules)} modules, {checked_includes} "
          f"module includes: no cycle, every include linked, every link used")
    return 0


if __name__ == "__main__":
    sys.exit(main())
