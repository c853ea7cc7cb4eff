#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""names.py: names that stay true and limits that hold themselves.

- A comment or a document that names a file of the project (src/arena.c,
  arena_window.c, a glob such as shared_*.c) names one that exists.
- A comment or a document that names a function or macro of the project
  (sc_*, sicm_*, pl_*, SICM_*, or any name written as `name()`) names one
  the code defines; a `name()` the code does not define must be in the
  system's headers (libc, libnuma, hwloc, jemalloc, MPI) or listed in
  tests/names-external.txt, the names of other projects the text cites.
- No function passes 80 lines, no source file 600 lines and BENCHMARKS.md
  800 lines, unless tests/budgets.txt moves that one limit, with a reason.
"""
import fnmatch, glob, os, re, sys

top = os.environ.get("SICM_TOP_SRCDIR", ".")
ROOTS = ["src", "include", "tests", "tools", "bench", "examples", "python", "docs", "cmake", "man"]
TOP_FILES = ["README.md", "BENCHMARKS.md", "configure.ac", "Makefile.am"]
CODE = (".c", ".h", ".cc", ".cpp", ".hpp", ".f90")
SCRIPT = (".py", ".sh", ".am", ".ac", ".cmake", ".in")
DOC = (".md", ".txt")
SKIP_DIRS = {"results", "__pycache__", ".deps", ".libs"}
FUNCTION_LINES, SOURCE_LINES, BENCHMARKS_LINES = 80, 600, 800

def is_script(path):
    """A file without an extension is read when it is a script, not a
    program a build left in the tree."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
        return head.startswith(b"#!") and b"libtool" not in head
    except OSError:
        return False

def project_files():
    """The tree's files: git's list where the tree is a checkout (what a
    build leaves is ignored there), else a walk of the roots."""
    import subprocess
    try:
        listed = subprocess.run(["git", "-C", top, "ls-files", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, text=True, check=True)
        keep = [f for f in listed.stdout.split("\n") if f and os.path.exists(os.path.join(top, f))]
        if keep:
            return sorted(f for f in keep if f in TOP_FILES or (
                f.startswith(tuple(r + "/" for r in ROOTS)) and
                (f.endswith(CODE + SCRIPT + DOC) or f.startswith("man/") or "." not in f.split("/")[-1])))
    except (OSError, subprocess.CalledProcessError):
        pass
    out = [f for f in TOP_FILES if os.path.exists(os.path.join(top, f))]
    for root in ROOTS:
        for d, dirs, names in os.walk(os.path.join(top, root)):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
            for n in names:
                rel = os.path.relpath(os.path.join(d, n), top)
                if n.endswith(CODE + SCRIPT + DOC) or rel.startswith("man/") or (
                        "." not in n and is_script(os.path.join(d, n))):
                    out.append(rel)
    return sorted(set(out))

def read(rel):
    with open(os.path.join(top, rel), errors="replace") as f:
        return f.read()

def split_c(text):
    """(code, comments) of C or C++: comments blanked out of the code."""
    comments = []
    def keep(m):
        if m.group(0).startswith(("/*", "//")):
            comments.append(m.group(0))
            return " "
        return m.group(0)
    code = re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', keep, text,
                  flags=re.S)
    return code, "\n".join(comments)

def split_hash(text):
    """(code, comments) of a script whose comments start with '#'; a Python
    docstring counts as a comment."""
    comments = re.findall(r'"""(?:.|\n)*?"""', text)
    text = re.sub(r'"""(?:.|\n)*?"""', " ", text)
    lines, code = [], []
    for line in text.splitlines():
        m = re.match(r"^(\s*)#(?!include|define|if|endif|else|undef|!)(.*)", line)
        (lines if m else code).append(m.group(2) if m else line)
    return "\n".join(code), "\n".join(comments + lines)

files = project_files()
failures = []
codes, prose = {}, {}
for rel in files:
    text = read(rel)
    if rel.endswith(CODE):
        codes[rel], prose[rel] = split_c(text)
    elif rel.endswith(SCRIPT) or "." not in os.path.basename(rel) or rel.endswith("CMakeLists.txt"):
        codes[rel], prose[rel] = split_hash(text)
    elif rel.endswith(DOC):
        prose[rel] = text
    # man pages are written from the headers and docs/sicm.7.txt: their
    # names are checked there.

# ---- names the code defines ----
identifiers = set()
for text in codes.values():
    identifiers.update(re.findall(r"\b[A-Za-z_]\w*\b", text))
external = set()
path = os.path.join(top, "tests", "names-external.txt")
for line in open(path):
    line = line.split("#", 1)[0].strip()
    if line:
        external.add(line)

def system_names():
    """Identifiers of the system's headers that a `name()` may cite."""
    names = set()
    for pattern in ["/usr/include/*.h", "/usr/include/sys/*.h", "/usr/include/linux/mman.h",
                    "/usr/include/x86_64-linux-gnu/sys/*.h", "/usr/include/x86_64-linux-gnu/bits/*.h",
                    "/usr/include/jemalloc/*.h", "/usr/include/hwloc/*.h",
                    "/usr/include/x86_64-linux-gnu/openmpi/mpi.h", "/usr/include/x86_64-linux-gnu/mpich/mpi.h",
                    "/usr/include/python3*/*.h", "/usr/include/gtest/*.h", "/usr/include/benchmark/*.h"]:
        for h in glob.glob(pattern):
            try:
                names.update(re.findall(r"\b[A-Za-z_]\w*\b", open(h, errors="replace").read()))
            except OSError:
                pass
    return names
system = None  # read when a name() is neither the project's nor listed

# ---- files ----
basenames = {os.path.basename(f) for f in files}
all_paths = set(files)
for rel in files:
    parts = rel.split("/")
    for i in range(1, len(parts)):
        all_paths.add("/".join(parts[:i]) + "/")
PROJECT_DIRS = tuple(r + "/" for r in ROOTS)
FILE_REF = re.compile(r"(?<![\w./*-])((?:[\w*-]+/)*[\w*-]+\.(?:c|h|cc|cpp|hpp|py|sh|am|f90))(?![\w/])")
_system_headers = None
def system_headers():
    """Every header under /usr/include, by path below it and by name."""
    global _system_headers
    if _system_headers is None:
        _system_headers = set()
        for d, _, names in os.walk("/usr/include"):
            for n in names:
                rel = os.path.relpath(os.path.join(d, n), "/usr/include")
                _system_headers.update({n, rel, rel.split("/", 1)[-1]})
    return _system_headers

def file_exists(ref):
    if "*" in ref:
        pool = files if "/" in ref else basenames
        return any(fnmatch.fnmatch(f, ref) for f in pool)
    if "/" in ref:
        found = ref in all_paths or any(f.endswith("/" + ref) for f in files)
    else:
        found = ref in basenames
    return found or (ref.endswith(".h") and ref in system_headers())

def cites_project_file(ref):
    if ref.startswith(PROJECT_DIRS):
        return True
    return "/" not in ref

NAME_REF = re.compile(r"\b((?:sc|sicm|pl|SICM|SC|PL)_\w*[A-Za-z0-9])\b")
CALL_REF = re.compile(r"(?<![\w.>:-])([A-Za-z_]\w*)\(\)")
for rel in sorted(prose):
    text = prose[rel]
    if rel == "BENCHMARKS.md" or rel.startswith("docs/bench-history"):
        continue  # records of runs: they name the code as it was then
    seen = set()
    for ref in FILE_REF.findall(text):
        if ref in seen or ref in external or not cites_project_file(ref):
            continue
        seen.add(ref)
        if not file_exists(ref):
            failures.append(f"{rel}: names {ref}, which is not a file of the project")
    # A quoted string is a value (a magic word, an output line), not a name.
    for name in NAME_REF.findall(re.sub(r'"[^"\n]*"', " ", text)):
        if name in seen or name in identifiers or name in external:
            continue
        seen.add(name)
        # An environment variable or a prefix written with a trailing '*'.
        if name.endswith("_") or re.search(re.escape(name) + r"\*", text):
            continue
        failures.append(f"{rel}: names {name}, which the code does not define")
    for name in CALL_REF.findall(text):
        if name in seen or name in identifiers or name in external:
            continue
        if system is None:
            system = system_names()
        if name in system:
            continue
        seen.add(name)
        failures.append(f"{rel}: names {name}(), which neither the code nor the system defines "
                        "(tests/names-external.txt lists other projects' names)")

# ---- budgets ----
budgets = {}
for line in open(os.path.join(top, "tests", "budgets.txt")):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    m = re.match(r"(\S+)\s+(\d+)\s+(\S.*)$", line)
    if not m:
        failures.append(f"tests/budgets.txt: '{line}' is not WHAT LINES REASON")
        continue
    budgets[m.group(1)] = int(m.group(2))

def c_functions(text):
    """(name, first line, lines) of each function defined at column 0."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if (line.endswith("{") and re.match(r"[A-Za-z_]", line) and "=" not in line
                and not re.match(r"(typedef|struct|enum|union|extern \"C\"|namespace)\b", line)):
            start = i
            while (start > 0 and lines[start - 1].strip() and re.match(r"[A-Za-z_ ]", lines[start - 1])
                   and not lines[start - 1].rstrip().endswith((";", "}", "*/", ")"))):
                start -= 1
            header = " ".join(lines[start:i + 1])
            m = re.search(r"([A-Za-z_]\w*)\s*\(", header)
            end = i + 1
            while end < len(lines) and not lines[end].startswith("}"):
                end += 1
            if m:
                yield m.group(1), start + 1, end - start + 1
            i = end
        i += 1

def py_functions(text):
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"(\s*)def (\w+)", line)
        if not m:
            continue
        indent, last = len(m.group(1)), i
        for j in range(i + 1, len(lines)):
            if lines[j].strip() and len(lines[j]) - len(lines[j].lstrip()) <= indent:
                break
            if lines[j].strip():
                last = j
        yield m.group(2), i + 1, last - i + 1

used_budgets = set()
def over(what, lines, limit):
    limit = budgets.get(what, limit)
    if what in budgets:
        used_budgets.add(what)
    return lines > limit, limit

for rel in files:
    if rel.startswith(("docs/", "man/")) or rel in TOP_FILES or not rel.endswith(CODE + (".py",)):
        continue
    text = read(rel)
    n = text.count("\n")
    bad, limit = over(rel, n, SOURCE_LINES)
    if bad:
        failures.append(f"{rel}: {n} lines, over its budget of {limit}")
    funcs = c_functions(text) if rel.endswith(CODE) else py_functions(text)
    for name, line, length in funcs:
        bad, limit = over(f"{rel}:{name}", length, FUNCTION_LINES)
        if bad:
            failures.append(f"{rel}:{line}: {name} is {length} lines, over its budget of {limit}")
n = read("BENCHMARKS.md").count("\n")
bad, limit = over("BENCHMARKS.md", n, BENCHMARKS_LINES)
if bad:
    failures.append(f"BENCHMARKS.md: {n} lines, over its budget of {limit}")
for what in sorted(set(budgets) - used_budgets):
    failures.append(f"tests/budgets.txt: {what} names nothing that is measured; remove the line")

for line in failures:
    print("names:", line)
print(f"names: {len(files)} files checked, {len(failures)} violations")
sys.exit(1 if failures else 0)
