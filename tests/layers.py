#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""layers.py: the internal structure of src/ as base.h describes it.

- Imports run one way: base <- devices <- arenas <- {migration, shared} <-
  {intent, autoplace} <- report <- init; a file includes only headers of its
  own subsystem or of a lower layer, so there are no circles.
- Calls obey the same rule: an internal function (sc_*) is called only
  from its own subsystem or a higher layer, judged by the header that
  declares it, so a declaration put in a lower layer's header cannot hide
  an upward call; a public function (sicm_*) likewise, judged by the file
  that defines it.
- docs/design.md's source map has a row for every source file of src/.
- A kind of arena is private to its files: arena_je.h is included only by
  arena_je*.c and init.c, and only a kind's own files compare an arena's
  operations table (ask which kind an arena is).
"""
import fnmatch, os, re, sys

src = os.path.join(os.environ.get("SICM_TOP_SRCDIR", "."), "src")
# (layer, subsystem) by file-name prefix, longest prefix first.
RULES = [("arena_je", (2, "arena")), ("base", (0, "base")), ("device", (1, "devices")),
         ("state", (1, "devices")), ("arena", (2, "arena")), ("migrate", (3, "migrate")),
         ("shared", (3, "shared")), ("intent", (4, "intent")),
         ("autoplace", (4, "autoplace")), ("report", (5, "report")), ("init", (6, "init"))]

def layer_of(name):
    for prefix, where in RULES:
        if name.startswith(prefix):
            return where
    return None

failures = []
files = sorted(f for f in os.listdir(src) if f.endswith((".c", ".h")))

def strip_comments(text):
    """The code alone: comments and string literals blanked."""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', " ", text, flags=re.S)

# Each internal function -> the header that declares it (a prototype or a
# static inline definition at the start of a line).
declared = {}
for h in (f for f in files if f.endswith(".h")):
    text = strip_comments(open(os.path.join(src, h)).read())
    for name in re.findall(r"^[A-Za-z_][\w \t\*]*?\b(sc_\w+)\s*\(", text, re.M):
        declared.setdefault(name, h)
# Each public function -> the file that defines it.
defined = {}
for c in (f for f in files if f.endswith(".c")):
    text = strip_comments(open(os.path.join(src, c)).read())
    for name in re.findall(r"^[A-Za-z_][\w \t\*]*?\b(sicm_\w+)\s*\([^;{]*\)\s*\{", text, re.M):
        defined.setdefault(name, c)
for f in files:
    where = layer_of(f)
    if where is None:
        failures.append(f"{f}: no layer (name it after its subsystem)")
        continue
    text = open(os.path.join(src, f)).read()
    for inc in re.findall(r'^#include "([^"]+)"', text, re.M):
        if inc in ("config.h", "sicm.h"):  # generated; the public API
            continue
        dep = layer_of(inc)
        if dep is None:
            failures.append(f"{f}: includes {inc}, which has no layer")
        elif dep[1] != where[1] and dep[0] >= where[0]:
            failures.append(f"{f} ({where[1]}) includes {inc} ({dep[1]}): not a lower layer")
        if inc == "arena_je.h" and not (f.startswith("arena_je") or f == "init.c"):
            failures.append(f"{f}: includes arena_je.h, private to the jemalloc kind")
    if f.endswith(".c"):
        for name in sorted(set(re.findall(r"\b(sc_\w+)\s*\(", strip_comments(text)))):
            header = declared.get(name)
            if header is None:
                continue
            dep = layer_of(header)
            if dep[1] != where[1] and dep[0] >= where[0]:
                failures.append(f"{f} ({where[1]}) calls {name} of {header} ({dep[1]}): "
                                "not a lower layer")
            if header == "arena_je.h" and not (f.startswith("arena_je") or f == "init.c"):
                failures.append(f"{f}: calls {name}, private to the jemalloc kind")
        for name in sorted(set(re.findall(r"\b(sicm_\w+)\s*\(", strip_comments(text)))):
            home = defined.get(name)
            if home is None or home == f:
                continue
            dep = layer_of(home)
            if dep[1] != where[1] and dep[0] >= where[0]:
                failures.append(f"{f} ({where[1]}) calls {name} of {home} ({dep[1]}): "
                                "not a lower layer")
    kind = f.startswith(("arena_je", "shared"))
    if not kind and re.search(r"->ops\s*[!=]=|==\s*&\w*_ops\b", text):
        failures.append(f"{f}: asks which kind an arena is; only a kind's own files may")

# docs/design.md's source map names every source file of src/: a row whose
# first column gives its path, or a glob or directory holding it with the
# file's stem named in the row (a header may go by its directory alone).
design = os.path.join(os.path.dirname(src), "docs", "design.md")
text = open(design).read()
source_map = text[text.index("## Source map"):]
rows = [line for line in source_map.splitlines() if line.startswith("| `")]
for root, _, names in os.walk(src):
    for name in sorted(n for n in names if n.endswith((".c", ".h", ".f90"))):
        rel = os.path.relpath(os.path.join(root, name), os.path.dirname(src))
        stem = name.rsplit(".", 1)[0]
        found = False
        for row in rows:
            paths = re.findall(r"`([^`]+)`", row.split("|")[1])
            if rel in paths:
                found = True
            elif any(fnmatch.fnmatch(rel, p) or (p.endswith("/") and rel.startswith(p))
                     for p in paths):
                found = found or name.endswith(".h") or f"`{stem}`" in row
        if not found:
            failures.append(f"{rel}: no row of docs/design.md's source map names it")

for line in failures:
    print("layers:", line)
print(f"layers: {len(files)} files checked, {len(failures)} violations")
sys.exit(1 if failures else 0)
