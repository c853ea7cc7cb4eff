# SPDX-License-Identifier: BSD-3-Clause
"""numpy_in_arena: a pytest plugin (-p numpy_in_arena) that runs numpy's own
tests with every array the test process's main context creates in a libsicm
arena: the arena's NEP 49 handler is entered at configure time, before any
test runs, and each test is checked to start with it current (a test may
install its own handler within its run, as numpy's test_mem_policy does).
SICM_NUMPY_MODE=sites puts arrays in per-line arenas instead (the default
threshold); SICM_NUMPY_MODE=none enters nothing, for the counts
of the same run on numpy's own allocator.  The summary line says how many
tests ran under it."""
import importlib.util
import os

import numpy as np
import pytest

import sicm

_state = {}


def pytest_configure(config):
    mode = os.environ.get("SICM_NUMPY_MODE", "arena")
    if mode == "none":
        _state.update(ctx=None, name="default_allocator", under=0, other=0)
        return
    if mode == "sites":
        ctx = sicm.site_arenas()
        name = "sicm_sites"
    elif mode == "arena":
        ctx = sicm.Arena(sicm.best("nearest"), name="numpy-tests")
        name = "sicm_arena:numpy-tests"
    else:
        raise pytest.UsageError("SICM_NUMPY_MODE is arena, sites or none, not %r" % mode)
    ctx.__enter__()
    _state.update(ctx=ctx, name=name, under=0, other=0)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    if np.core.multiarray.get_handler_name() == _state["name"]:
        _state["under"] += 1
    else:
        _state["other"] += 1


def _counts():
    ctx = _state["ctx"]
    arenas = [] if ctx is None else ctx.arenas if isinstance(ctx, sicm.SiteArenas) else [ctx]
    return [_state["under"], _state["other"], len(arenas), sum(a.stats()["allocated"] for a in arenas)]


# Under pytest-xdist the tests run in worker processes, each with its own
# arena: each sends its counts to the controller, which adds them up.
def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["sicm"] = _counts()


_workers = []


# xdist's hook: defined only where xdist is, since pytest refuses a plugin
# with a hook no installed plugin declares.
if importlib.util.find_spec("xdist") is not None:
    def pytest_testnodedown(node, error):
        if "sicm" in getattr(node, "workeroutput", {}):
            _workers.append(node.workeroutput["sicm"])


def pytest_terminal_summary(terminalreporter):
    rows = _workers or [_counts()]
    under, other, arenas, held = (sum(r[i] for r in rows) for i in range(4))
    terminalreporter.write_line(
        "numpy_in_arena: %d tests ran with %s current, %d without, in %d process(es); %d arena(s), "
        "%d bytes allocated in them now" % (under, _state["name"], other, len(rows), arenas, held))
