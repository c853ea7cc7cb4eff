#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""mkman.py: the section-3 man pages of libsicm, written from the public
headers — one page per topic of the header (the banner comments), holding
the topic's types and every function with its comment, plus one page per
function that sources its topic's page, so `man FUNCTION` works.  Each
topic page ends with an EXAMPLES section: docs/examples/PAGE.c, a whole
program that `make check` builds and runs, so that it cannot rot.

  tools/mkman.py VERSION OUTDIR    writes OUTDIR/man3/*.3, OUTDIR/man7/sicm.7
                                   (from docs/sicm.7.txt) and OUTDIR/pages.am

The headers are the one source: tests/man.sh regenerates the pages and
fails when the checked-in copy (man/) differs or a function has no page."""
import os
import re
import sys

SPDX = "SPDX-License-Identifier: BSD-3-Clause"
# Written first in every page but the .so links (man reads those only when
# .so is their first line).
ROFF_SPDX = '.\\" ' + SPDX
HEADERS = ["include/sicm.h", "include/sicm_migration.h", "include/sicm_shared.h", "include/sicm_fixed.h", "include/sicm_upkeep.h",
           "include/sicm_allocator.h",
           "include/sicm_autoplace.h"]
# Banner title prefix -> (page, one-line summary for NAME).
TOPICS = [
    ("Library lifetime", "sicm_init", "start and stop libsicm"),
    ("Devices", "sicm_devices", "the memory devices of this machine"),
    ("Ranking", "sicm_rank", "order devices by bandwidth, latency, capacity or distance"),
    ("Arenas", "sicm_arena", "groups of allocations placed on devices and moved together"),
    ("Migration", "sicm_migration", "move a whole arena to other devices"),
    ("Shared arenas", "sicm_shared", "one heap in POSIX shared memory for the processes of a node"),
    ("Fixed arenas", "sicm_fixed", "allocations from memory the caller owns"),
    ("Upkeep", "sicm_upkeep", "defragmentation and the allocator's background threads"),
    ("Allocators by intent", "sicm_allocator", "OpenMP-style memory spaces, traits and allocators"),
    ("Intent hints", "sicm_intent", "say what data needs, get the device that fits"),
    ("Automatic placement", "sicm_autoplace", "hot arenas find the fast tier by themselves"),
]


def sections(text):
    """(banner title, body) pairs in header order."""
    banner = re.compile(r"/\* -{20,} \*/\n/\* (.*?)\s*\*/\n/\* -{20,} \*/\n")
    marks = list(banner.finditer(text))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.end():end]
        # The inline fast path is the header's own machinery, not API.
        body = body.split("/* ---- The inline fast path ----")[0]
        body = body.split("#ifdef __cplusplus")[0]
        yield m.group(1), body


def items(body):
    """Split a section into (comment, code) items: each code chunk runs to
    the end of its declaration, with the comment just above it."""
    out = []
    pos = 0
    token = re.compile(r"/\*.*?\*/|#define[^\n]*\n|(?:(?!/\*)[^;{}])*?(\{.*?\}[^;]*;|;)", re.S)
    pending = None
    while pos < len(body):
        while pos < len(body) and body[pos] in " \n":
            pos += 1
        if pos >= len(body):
            break
        m = token.match(body, pos)
        if m is None:
            break
        chunk = m.group(0)
        pos = m.end()
        if chunk.startswith("/*"):
            if pending is not None:
                out.append((pending, ""))
            pending = chunk
        else:
            out.append((pending, chunk.strip()))
            pending = None
    if pending is not None:
        out.append((pending, ""))
    return out


def comment_text(c):
    if not c:
        return []
    lines = c.strip()[2:-2].split("\n")
    return [re.sub(r"^\s*\* ?", "", l) if i else l.strip() for i, l in enumerate(lines)]


GLYPHS = {"\u2014": "\\(em", "\u2013": "\\(en", "\u00d7": "\\(mu", "\u2192": "\\(->",
          "\u2190": "\\(<-", "\u2264": "\\(<=", "\u2265": "\\(>=", "\u2026": "...",
          "\u2019": "\\(cq", "\u00b5": "\\(mc"}


def esc(s, code=False):
    s = s.replace("\\", "\\e")
    s = "".join(GLYPHS.get(c, c) if ord(c) < 128 or c in GLYPHS else f"\\[u{ord(c):04X}]" for c in s)
    if not code:
        s = re.sub(r"`([^`]+)`", r"\\fI\1\\fP", s)
    if s.startswith((".", "'")):
        s = "\\&" + s
    return s


def roff_paragraphs(lines):
    """Comment lines to roff: errno lists become tagged paragraphs."""
    out, in_list = [], False
    for line in lines:
        m = re.match(r"\s+([A-Z][A-Z0-9_]+(?:, [A-Z][A-Z0-9_]+)*)\s{2,}(.*)", line)
        indented = re.match(r"\s{3,}\S", line)
        if m and (m.group(1).startswith("E") or in_list):
            out += [".TP", ".B " + m.group(1), esc(m.group(2))]
            in_list = True
        elif line.strip() == "":
            out.append(".PP")
            in_list = False
        elif in_list and indented:
            out.append(esc(line.strip()))
        elif indented:
            out += [".br", esc(line.strip())]
        else:
            if in_list:
                out.append(".PP")
                in_list = False
            out.append(esc(line.strip()))
    return out


def function_name(code):
    m = re.search(r"\b(sicm_\w+)\s*\(", code)
    return m.group(1) if m else None


def example_section(path):
    """docs/examples/PAGE.c as a literal block."""
    out = [".SH EXAMPLES", ".in +4n", ".EX"]
    lines = open(path).read().rstrip("\n").split("\n")
    out += [esc(line.rstrip(), code=True) for line in lines if SPDX not in line]
    return out + [".EE", ".in"]


def page(version, page_name, summary, title, body, header, others, example):
    decls, types = [], []
    for comment, code in items(body):
        if code.startswith("SICM_API") and "extern" not in code.split("(")[0]:
            decls.append((comment, re.sub(r"\s+", " ", code.replace("SICM_API ", "").replace("SICM_PER_CALL ", ""))))
        elif code or comment:
            types.append((comment, code))
    names = [function_name(code) for _, code in decls]
    out = [ROFF_SPDX, f'.TH {page_name.upper()} 3 "" "libsicm {version}" "libsicm Manual"',
           ".SH NAME", esc(", ".join(names)) + " \\- " + summary,
           ".SH SYNOPSIS", ".nf", f".B #include <{header}>", ""]
    for _, code in decls:
        out.append(".BI \"" + code.replace("\\", "\\e").replace('"', '\\(dq') + "\"")
    out += [".fi", ".PP", "Link with", ".IR \\-lsicm ."]
    out += [".SH DESCRIPTION", f"{esc(title)}.", ".PP",
            "Each function returns as documented below; on failure it sets",
            ".I errno",
            "and",
            ".BR sicm_error_detail ()",
            "describes the cause in words."]
    for comment, code in decls:
        out += [".SS " + function_name(code) + "()"] + roff_paragraphs(comment_text(comment))
    if types:
        out += [".SH DATA TYPES AND CONSTANTS", ".in +4n", ".nf"]
        for comment, code in types:
            for line in ([] if not comment else comment.split("\n")) + code.split("\n"):
                out.append(esc(line.rstrip(), code=True))
            out.append("")
        out += [".fi", ".in"]
    out += example_section(example)
    out += [".SH SEE ALSO",
            ",\n".join(f".BR {o} (3)" for o in others if o != page_name) + ",",
            ".BR sicm-info (1)"]
    return names, "\n".join(out) + "\n"


def overview(version, text):
    """docs/sicm.7.txt to roff: '# ' sections, '## ' tagged items, '.'
    lines as they are, indented lines as literal blocks, the rest text."""
    out = [ROFF_SPDX, f'.TH SICM 7 "" "libsicm {version}" "libsicm Manual"']
    literal = False
    for line in text.split("\n"):
        if literal and not line.startswith("    "):
            out += [".fi", ".in"]
            literal = False
        if line.startswith("# "):
            out.append(".SH " + line[2:])
        elif line.startswith("## "):
            out += [".TP", ".B " + esc(line[3:], code=True)]
        elif line.startswith("    "):
            if not literal:
                out += [".in +4n", ".nf"]
                literal = True
            out.append(esc(line[4:], code=True))
        elif line.startswith("."):
            out.append(line)
        elif line.startswith("sicm - "):
            out.append("sicm \\- " + esc(line[7:]))
        elif line:
            out.append(esc(line))
    return "\n".join(out).rstrip("\n") + "\n"


def main():
    version, outdir = sys.argv[1], sys.argv[2]
    top = os.environ.get("SICM_TOP_SRCDIR", os.path.join(os.path.dirname(__file__), ".."))
    os.makedirs(os.path.join(outdir, "man3"), exist_ok=True)
    pages, links = [], []
    others = [p for _, p, _ in TOPICS]
    for header in HEADERS:
        text = open(os.path.join(top, header)).read()
        for title, body in sections(text):
            topic = next((t for t in TOPICS if title.startswith(t[0])), None)
            if topic is None:
                sys.exit(f"mkman: no page for the section '{title}' of {header}: add it to TOPICS")
            example = os.path.join(top, "docs", "examples", topic[1] + ".c")
            if not os.path.exists(example):
                sys.exit(f"mkman: the page {topic[1]} has no example: write {example}")
            names, roff = page(version, topic[1], topic[2], title, body, os.path.basename(header),
                               others, example)
            with open(os.path.join(outdir, "man3", topic[1] + ".3"), "w") as f:
                f.write(roff)
            pages.append(topic[1])
            for name in names:
                if name != topic[1]:
                    with open(os.path.join(outdir, "man3", name + ".3"), "w") as f:
                        f.write(f".so man3/{topic[1]}.3\n")
                    links.append(name)
    os.makedirs(os.path.join(outdir, "man7"), exist_ok=True)
    with open(os.path.join(outdir, "man7", "sicm.7"), "w") as f:
        f.write(overview(version, open(os.path.join(top, "docs", "sicm.7.txt")).read()))
    files = sorted(f"man/man3/{n}.3" for n in pages + links)
    with open(os.path.join(outdir, "pages.am"), "w") as f:
        f.write(f"# {SPDX}\n# Written by tools/mkman.py from the public headers; do not edit.\n")
        f.write("MAN3_PAGES = \\\n" + " \\\n".join("\t" + p for p in files) + "\n")


if __name__ == "__main__":
    main()
