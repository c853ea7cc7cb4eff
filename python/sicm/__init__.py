# SPDX-License-Identifier: BSD-3-Clause
"""libsicm for Python: numpy arrays in arenas bound to memory devices.

A machine with several kinds of memory (DRAM, HBM, CXL or NVDIMM capacity
memory) shows each as a NUMA node; libsicm calls each node's memory of one
page size a *device*.  An *arena* is a heap bound to a device; numpy arrays
created inside ``with arena:`` keep their data there (numpy's NEP 49
allocator interface), and ``arena.move(device)`` moves every page of the
arena at once while every array stays valid::

    import numpy as np, sicm
    hbm = sicm.best("bandwidth")
    with sicm.Arena(hbm, name="solver") as arena:
        a = np.zeros(1 << 20)
    sicm.where(a)                  # {2: 2048}: pages per NUMA node
    arena.move(sicm.best("capacity"))

``with`` applies to the current context: the thread, or the asyncio task,
that entered it (a new thread starts with numpy's default allocator).
An array freed later, anywhere, goes back to its arena, and an arena is
never destroyed while one of its arrays lives.

``sicm.autoplace()`` starts libsicm's placer, which measures how often each
arena's pages are referenced and keeps the hottest on the fast devices;
with ``sites=True`` (or inside ``sicm.site_arenas()``) arrays of at least a
threshold size go to one arena per Python source line that created them,
named ``site:<file>:<line>`` in libsicm's statistics (``SICM_STATS``).

Errors of the library are OSError with its errno (ENOMEM, EBUSY, ...);
wrong types are TypeError, bad values ValueError.
"""
import math
import numbers
import os as _os

import numpy as _np

from . import _sicm
from ._sicm import Arena, Device, SiteArenas

__all__ = ["Arena", "Device", "SiteArenas", "Placer", "autoplace", "best", "device", "devices",
           "interleave_weights", "site_arenas", "where"]
__version__ = "0.1.0"

_RANK = {"bandwidth": _sicm.RANK_BANDWIDTH, "latency": _sicm.RANK_LATENCY,
         "capacity": _sicm.RANK_CAPACITY, "nearest": _sicm.RANK_NEAREST}

# Frames in these directories are never a "site": numpy's own Python code
# (np.ones, np.linspace, ...) and this package allocate for their caller.
_SKIP = (_os.path.dirname(_np.__file__) + _os.sep, _os.path.dirname(__file__) + _os.sep)


def devices():
    """devices() -> list of Device

    Every memory device: one per NUMA node with base pages, and one per
    hugetlb page size with pages reserved on a node.  A Device has node,
    kind ('dram', 'hbm', 'capacity', 'unknown'), page_size, capacity and
    free (bytes, free now), has_cpus, huge, read_bandwidth (MB/s) and
    read_latency (ns) (0: unknown)."""
    return _sicm.devices()


def device(node, page_size=0):
    """device(node, page_size=0) -> Device

    The device of NUMA node `node` with that page size (0: base pages).
    OSError ENODEV when there is none."""
    return _sicm.device(node, page_size)


def best(by="bandwidth", initiator=None):
    """best(by="bandwidth", initiator=None) -> Device

    The device ranked first by "bandwidth" (highest), "latency" (lowest),
    "capacity" (largest) or "nearest" (NUMA distance), seen from node
    `initiator` (None: the node of the calling thread's CPU)."""
    if by not in _RANK:
        raise ValueError("by must be one of %s, not %r" % (", ".join(sorted(_RANK)), by))
    return _sicm.best(_RANK[by], -1 if initiator is None else initiator)


def interleave_weights(devices, from_bandwidth=False):
    """interleave_weights(devices, from_bandwidth=False) -> list of int

    The weights an ``Arena(devices, placement="weighted")`` spreads its
    pages by: of every sum-of-weights pages, weights[i] are on devices[i].
    They are the system's, which root sets in
    /sys/kernel/mm/mempolicy/weighted_interleave (all 1 on Linux before
    6.9, where such an arena interleaves evenly).  With from_bandwidth,
    weights in proportion to the devices' bandwidth instead, what an
    administrator may write there; OSError ENODATA when a device's
    bandwidth is unknown."""
    return _sicm.interleave_weights(devices, bool(from_bandwidth))


def where(array):
    """where(array) -> {node: pages}

    Pages per NUMA node of the memory an array's data spans (its base's
    pages, for a view), as the kernel reports them now (move_pages(2)).
    Pages never touched are not counted."""
    if not isinstance(array, _np.ndarray):
        raise TypeError("where() wants a numpy.ndarray, not %s" % type(array).__name__)
    low, high = _np.byte_bounds(array)
    return _sicm.pages(low, high)


def site_arenas(device=None, threshold=64 << 10, skip=()):
    """site_arenas(device=None, threshold=65536, skip=()) -> SiteArenas

    A context manager: inside ``with sicm.site_arenas():`` every numpy array
    of at least `threshold` bytes gets its data from one arena per Python
    source line that created it — the innermost frame outside numpy, this
    package and the path prefixes in `skip` — named ``site:<file>:<line>``
    and bound to `device` (None: the DRAM of the calling thread's node).
    Smaller arrays go to numpy's default allocator.  Its `arenas` lists the
    arenas made so far."""
    if device is None:
        device = best("nearest")
    return SiteArenas(device, threshold, _SKIP + tuple(skip))


class Placer:
    """The running placer (see autoplace()).  As a context manager, leaving
    it stops the placer and, with sites, the per-line arenas' context."""

    def __init__(self, sites):
        self.sites = sites
        self.running = True

    def stop(self):
        """Stop the placer (it finishes a move in progress); the arenas stay
        where they are.  With sites, the handler that was current before
        autoplace() is current again in the context that called it."""
        if not self.running:
            return
        self.running = False
        try:
            if self.sites is not None:
                _sicm.handler_pop()
        finally:
            _sicm.autoplace_stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def _setting(key, value, kind):
    """One item of SICM_AUTOPLACE's text (sicm(7), SETTINGS): a string is
    taken as it is written; a number is written in the grammar, an int as
    bytes or intervals, a float as seconds or a share."""
    if isinstance(value, str):
        if any(c in value for c in ",;="):
            raise ValueError("%s=%r: a value holds no ',', ';' or '='" % (key, value))
        return "%s=%s" % (key, value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or (
            kind in ("size", "count") and not isinstance(value, numbers.Integral)):
        want = {"size": "an int of bytes or a SIZE such as '2G'",
                "count": "an int",
                "time": "seconds or a TIME such as '500ms'",
                "share": "a share of one core or a SHARE such as '1%'"}[kind]
        raise TypeError("%s takes %s, not %r" % (key, want, value))
    if kind in ("size", "count"):
        return "%s=%d" % (key, value)
    if kind == "time":  # whole milliseconds, as interval takes them
        return "%s=%dms" % (key, round(value * 1000)) if math.isfinite(value) else "%s=%r" % (key, value)
    return "%s=%s" % (key, ("%.9f" % value).rstrip("0").rstrip("."))


def autoplace(fast=None, budget=None, interval=None, reserve=None, half_life=None, sites=False,
              threshold=64 << 10, monitor_only=False, cpu=None):
    """autoplace(fast=None, budget=None, interval=None, reserve=None, half_life=None,
              sites=False, threshold=65536, monitor_only=False, cpu=None) -> Placer

    Start libsicm's placer: a thread that every `interval` (seconds, or a
    TIME such as "500ms"; default 1 s) measures how often each arena's pages
    are referenced and moves the hottest onto the `fast` device(s) (a
    Device or a list; None: the device ranked first by bandwidth), within
    `budget` bytes (an int or a SIZE such as "2G"; None or 0: all the fast
    tier's free memory less `reserve`, 64 MiB by default).  Every arena
    takes part; with monitor_only=True it measures and never moves.
    Measuring takes at most `cpu` of one core (a share above 0, at most 1,
    or a SHARE such as "1%"; default 1%): where it would cost more, the
    placer measures less often.  The values read as SICM_AUTOPLACE's do
    (sicm(7), SETTINGS), and one the library refuses raises ValueError
    with its words.  With sites=True, arrays of at least `threshold` bytes
    created in the calling context from now on go to one arena per source
    line (see site_arenas()).  OSError EBUSY if a placer already runs (also
    one started by SICM_AUTOPLACE), ENOTSUP if the kernel does not report
    referenced pages to this process."""
    fast = [fast] if isinstance(fast, Device) else fast
    items = []
    if fast is not None:
        if not isinstance(fast, (list, tuple)) or not all(isinstance(d, Device) for d in fast):
            raise TypeError("fast must be a sicm.Device or a sequence of them")
        if any(d.huge for d in fast):
            raise ValueError("the fast tier holds devices of base pages: the placer moves "
                             "arenas of base pages")
        items.append("fast=" + "+".join(str(d.node) for d in fast))
    for key, value, kind in (("budget", budget, "size"), ("reserve", reserve, "size"),
                             ("interval", interval, "time"), ("halflife", half_life, "count"),
                             ("cpu", cpu, "share")):
        if value is not None:
            items.append(_setting(key, value, kind))
    if monitor_only:
        items.append("mode=monitor")
    text = ",".join(items) or "on"
    group = site_arenas(threshold=threshold) if sites else None
    _sicm.autoplace_start(text)
    if group is not None:
        try:
            group.__enter__()
        except BaseException:
            _sicm.autoplace_stop()
            raise
    return Placer(group)
