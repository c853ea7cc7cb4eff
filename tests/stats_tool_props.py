# SPDX-License-Identifier: BSD-3-Clause
"""stats_tool_props.py (run by tests/stats_props.sh): properties of
tools/sicm-stats over inputs that Hypothesis makes.
 - Any input (JSON values, bytes, lines nested deeply, valid reports with a
   field replaced, removed or their text cut) is summarised (status 0 and
   a summary, strict JSON with --json) or refused (a nonzero status and
   file:line on stderr); no exception leaves the tool's main in this
   process, and the command itself, run on a few of them, prints no
   traceback.
 - Valid reports, some given again (respaced, in another file): the job's
   reports and bytes are those of the distinct reports, counted once.
Hypothesis is Debian's python3-hypothesis: without it SKIP (status 77), or
a failure when SICM_PYTHON_REQUIRED=1.  About 570 examples, a few
seconds; no example database is kept."""
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout, redirect_stderr

try:
    from hypothesis import HealthCheck, given, settings, strategies as st
    from hypothesis.configuration import set_hypothesis_home_dir
except ImportError:
    required = os.environ.get("SICM_PYTHON_REQUIRED") == "1"
    print("%s: no hypothesis for %s (Debian: apt-get install python3-hypothesis)" %
          ("FAILED" if required else "SKIP", sys.executable))
    sys.exit(1 if required else 77)

top = os.environ.get("SICM_TOP_SRCDIR", os.path.join(os.path.dirname(__file__), ".."))
tool = os.path.join(top, "tools", "sicm-stats")
loader = importlib.machinery.SourceFileLoader("sicm_stats", tool)
spec = importlib.util.spec_from_loader("sicm_stats", loader)
stats = importlib.util.module_from_spec(spec)
loader.exec_module(stats)
tmp = tempfile.mkdtemp(prefix="stats_props.")
set_hypothesis_home_dir(os.path.join(tmp, "hypothesis"))  # its caches: not in the tree
FILES = [os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")]
NAMED = re.compile(re.escape(tmp) + r"/[ab]\.json:\d+: ")


def examples(n):
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


KEYS = ["pid", "rank", "host", "time", "arenas", "name", "default", "devices", "node", "kind",
        "held", "peak_held", "allocated", "resident", "migrations", "migrations_failed",
        "migration_seconds", "bytes_moved", "destroyed", "placer", "started", "start_time",
        "moves", "cpu_seconds", "decisions_dropped", "decisions", "to", "error", "0", "1"]
scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6) |
           st.sampled_from([-1, 2 ** 64 - 1, 2 ** 64, 1e400, -0.0, "1", ""]))
values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
    st.sampled_from(KEYS) | st.text(max_size=4), kids, max_size=4), max_leaves=10)

counts = st.integers(0, 2 ** 64 - 1)
secs = st.floats(0, 1e12) | st.integers(0, 10 ** 6)
arenas = st.fixed_dictionaries({
    "name": st.text(max_size=6), "default": st.booleans(),
    "devices": st.lists(st.fixed_dictionaries({"node": st.integers(-1, 7),
                                               "kind": st.sampled_from(["dram", "hbm", "pmem"])}),
                        max_size=2),
    "held": counts, "peak_held": counts, "allocated": counts,
    "resident": st.dictionaries(st.integers(0, 7).map(str), counts, max_size=3),
    "migrations": counts, "migrations_failed": counts, "migration_seconds": secs,
    "bytes_moved": counts})
placers = st.none() | st.fixed_dictionaries({
    "started": st.booleans(), "start_time": secs, "moves": counts, "cpu_seconds": secs,
    "decisions_dropped": counts})
decisions = st.fixed_dictionaries({"time": secs, "to": st.integers(0, 7),
                                   "error": st.integers(-5, 5)})
reports = st.fixed_dictionaries({
    "pid": st.integers(0, 1 << 22), "rank": st.none() | st.integers(0, 4095),
    "host": st.sampled_from(["n0", "n1"]) | st.text(max_size=5), "time": secs,
    "arenas": st.lists(arenas, max_size=3),
    "destroyed": st.fixed_dictionaries({"arenas": counts, "migrations": counts,
                                        "migrations_failed": counts, "migration_seconds": secs,
                                        "bytes_moved": counts}),
    "placer": placers, "decisions": st.lists(decisions, max_size=2)})


def places(v):
    """Every (container, key) inside v."""
    keys = v.keys() if isinstance(v, dict) else range(len(v)) if isinstance(v, list) else ()
    for k in list(keys):
        yield v, k
        yield from places(v[k])


@st.composite
def mutated(draw):
    """A valid report's line with one field replaced or removed, or its text
    cut, or a byte changed."""
    r = draw(reports)
    how = draw(st.sampled_from(["replace", "remove", "cut", "byte"]))
    where = list(places(r))
    if how in ("replace", "remove"):
        parent, key = where[draw(st.integers(0, len(where) - 1))]
        if how == "replace":
            parent[key] = draw(values)
        elif isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    text = json.dumps(r).encode()
    i = draw(st.integers(0, len(text)))
    if how == "cut":
        text = text[:i]
    elif how == "byte":
        text = text[:i] + draw(st.binary(min_size=1, max_size=2)) + text[i + 1:]
    return text


deep = st.tuples(st.sampled_from([50, 900, 3000, 100000]), st.sampled_from("[{")).map(
    lambda n_c: (n_c[1] * n_c[0] if n_c[1] == "[" else '{"a":' * n_c[0]).encode())
lines = st.one_of(values.map(lambda v: json.dumps(v).encode()), st.binary(max_size=40), deep,
                  mutated(), reports.map(lambda r: json.dumps(r).encode()))


def not_json(constant):
    raise AssertionError("--json wrote %s" % constant)


def verdict(contents, json_out=False):
    """The tool's main on these files: summarised, or refused at file:line."""
    for path, data in zip(FILES, contents):
        with open(path, "wb") as f:
            f.write(data)
    out, err = io.StringIO(), io.StringIO()
    args = ["--quiet"] + ["--json"] * json_out + FILES[:len(contents)]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            rc = stats.main(args)
    except SystemExit as e:  # main says why and returns a status instead
        raise AssertionError("main exited: %r" % (e.code,)) from None
    out, err = out.getvalue(), err.getvalue()
    if rc == 0:
        assert "skipped" not in err, err
        if json_out:
            json.loads(out, parse_constant=not_json)
        else:
            assert out.startswith("job: "), out
    else:
        assert rc != 0 and NAMED.search(err), (rc, err)
    return rc, out, err


@examples(250)
@given(st.lists(st.lists(lines, max_size=4).map(b"\n".join), min_size=1, max_size=2),
       st.booleans())
def any_files(contents, json_out):
    verdict(contents, json_out)


@examples(200)
@given(mutated(), st.booleans())
def one_mutated_report(text, json_out):
    verdict([text], json_out)


@examples(100)
@given(st.lists(reports, min_size=1, max_size=5, unique_by=lambda r: (r["pid"], r["time"])),
       st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.integers(0, 1)), max_size=6),
       st.randoms(use_true_random=False))
def counted_once(distinct, again, rnd):
    """Valid reports, some again (respaced, or in the other file)."""
    files = [[json.dumps(r) for r in distinct], []]
    for i, respaced, which in again:
        r = distinct[i % len(distinct)]
        files[which].append(json.dumps(r, sort_keys=respaced, indent=None,
                                       separators=(",", ":") if respaced else None))
    for f in files:
        rnd.shuffle(f)
    rc, out, err = verdict([("\n".join(f) + "\n").encode() for f in files], True)
    job = json.loads(out)["job"]
    assert rc == 0 and job["ranks"] == len(distinct), (rc, job["ranks"], err)
    assert job["held"] == sum(a["held"] for r in distinct for a in r["arenas"])


@examples(20)
@given(st.lists(lines, min_size=1, max_size=3).map(b"\n".join))
def as_the_command(data):
    with open(FILES[0], "wb") as f:
        f.write(data)
    p = subprocess.run([sys.executable, tool, "--quiet", FILES[0]], capture_output=True)
    err = p.stderr.decode(errors="replace")
    assert "Traceback" not in err and "internal error" not in err, err
    assert p.returncode == 0 or NAMED.search(err), (p.returncode, err)


failed = 0
for test in (any_files, one_mutated_report, counted_once, as_the_command):
    try:
        test()
        print("ok: %s" % test.__name__)
    except Exception as e:  # Hypothesis has printed the smallest example
        print("FAILED: %s: %s: %s" % (test.__name__, type(e).__name__, e))
        failed += 1
shutil.rmtree(tmp)
sys.exit(1 if failed else 0)
