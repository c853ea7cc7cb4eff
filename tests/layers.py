#!/usr/bin/env python3
"""layers.py: the internal structure of src/ as base.h describes it.

- Imports run one way: base <- devices <- arenas <- {migration, shared} <-
  intent <- init; a file includes only headers of its own subsystem or of
  a lower layer, so there are no circles.
- A kind of arena is private to its files: arena_je.h is included only by
  arena_je*.c and init.c, and only a kind's own files compare an arena's
  operations table (ask which kind an arena is).
"""
import os, re, sys

src = os.path.join(os.environ.get("SICM_TOP_SRCDIR", "."), "src")
# (layer, subsystem) by file-name prefix, longest prefix first.
RULES = [("arena_je", (2, "arena")), ("base", (0, "base")), ("device", (1, "devices")),
         ("state", (1, "devices")), ("arena", (2, "arena")), ("migrate", (3, "migrate")),
         ("shared", (3, "shared")), ("intent", (4, "intent")), ("init", (5, "init"))]

def place(name):
    for prefix, where in RULES:
        if name.startswith(prefix):
            return where
    return None

failures = []
files = sorted(f for f in os.listdir(src) if f.endswith((".c", ".h")))
for f in files:
    where = place(f)
    if where is None:
        failures.append(f"{f}: no layer (name it after its subsystem)")
        continue
    text = open(os.path.join(src, f)).read()
    for inc in re.findall(r'^#include "([^"]+)"', text, re.M):
        if inc in ("config.h", "sicm.h"):  # generated; the public API
            continue
        dep = place(inc)
        if dep is None:
            failures.append(f"{f}: includes {inc}, which has no layer")
        elif dep[1] != where[1] and dep[0] >= where[0]:
            failures.append(f"{f} ({where[1]}) includes {inc} ({dep[1]}): not a lower layer")
        if inc == "arena_je.h" and not (f.startswith("arena_je") or f == "init.c"):
            failures.append(f"{f}: includes arena_je.h, private to the jemalloc kind")
    kind = f.startswith(("arena_je", "shared"))
    if not kind and re.search(r"->ops\s*[!=]=|==\s*&\w*_ops\b", text):
        failures.append(f"{f}: asks which kind an arena is; only a kind's own files may")

for line in failures:
    print("layers:", line)
print(f"layers: {len(files)} files checked, {len(failures)} violations")
sys.exit(1 if failures else 0)
