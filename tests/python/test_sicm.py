# SPDX-License-Identifier: BSD-3-Clause
"""The Python package sicm on the host (one NUMA node): its API, the NEP 49
handler's contexts and lifetimes, and bad input.  Placement and migration
are checked in the multi-node guest (guest_placement.py)."""
import asyncio
import gc
import json
import os
import pickle
import subprocess
import sys
import threading
import weakref

import numpy as np
import pytest

import sicm

handler_name = np.core.multiarray.get_handler_name


@pytest.fixture
def dev():
    return sicm.best("nearest")


def test_devices_describe_the_machine():
    devs = sicm.devices()
    assert devs and all(isinstance(d, sicm.Device) for d in devs)
    for d in devs:
        assert d.kind in ("dram", "hbm", "capacity", "unknown")
        assert d.page_size >= 4096 and d.capacity > 0 and 0 < d.free <= d.capacity
        assert sicm.device(d.node, d.page_size if d.huge else 0) == d if d.huge else sicm.device(d.node) == d or d.huge
    assert sicm.devices()[0] == sicm.devices()[0] and hash(devs[0]) == hash(sicm.devices()[0])
    for by in ("bandwidth", "latency", "capacity", "nearest"):
        assert sicm.best(by) in devs


def test_a_device_crosses_processes_as_its_node():
    d = sicm.devices()[0]
    assert pickle.loads(pickle.dumps(d)) == d
    with pytest.raises(OSError) as e:
        sicm.device(4095)
    assert e.value.errno == 19  # ENODEV


def test_bad_input_raises_never_crashes(dev):
    with pytest.raises(TypeError):
        sicm.Arena("dram")
    with pytest.raises(TypeError):
        sicm.Arena(None)
    with pytest.raises(ValueError):
        sicm.Arena(dev, maxsize=-1)
    with pytest.raises(ValueError):
        sicm.Arena(dev, name='quote"d')
    with pytest.raises(ValueError):
        sicm.Arena(dev, name="x" * 32)
    with pytest.raises(ValueError):
        sicm.best("fastest")
    with pytest.raises(TypeError):
        sicm.where([1, 2, 3])
    for devices in ([], [dev] * 65):
        with pytest.raises(ValueError):
            sicm.Arena(devices)
    with pytest.raises(TypeError):
        sicm.Arena([dev, "dram"])
    with pytest.raises(ValueError, match="placement"):
        sicm.Arena(dev, placement="spread")
    with pytest.raises(OSError):
        sicm.Arena([dev, dev])  # a device twice: the library's EINVAL
    with pytest.raises(ValueError):
        sicm.interleave_weights([])
    a = sicm.Arena(dev)
    with pytest.raises(TypeError):
        a.move(0)
    with pytest.raises(ValueError, match="placement"):
        a.move(dev, placement="spread")
    with pytest.raises(RuntimeError):
        a.__exit__(None, None, None)  # never entered here
    with pytest.raises(ValueError):
        sicm.site_arenas(threshold=0)
    with pytest.raises(TypeError):
        sicm.autoplace(fast="hbm")
    for cpu in (0, -0.1, 1.5, "0%", "101%"):
        with pytest.raises(ValueError):
            sicm.autoplace(fast=dev, cpu=cpu)
    # The values SICM_AUTOPLACE refuses, refused with the library's words
    # before anything starts.
    for kw, words in ((dict(interval=4294967.306), "interval"), (dict(interval=0.0005), "interval"),
                      (dict(interval="1h"), "interval"), (dict(budget=2**64), "budget"),
                      (dict(reserve=-1), "reserve"), (dict(half_life=0), "halflife"),
                      (dict(budget="lots"), "budget"), (dict(budget="2G,mode=monitor"), "budget"),
                      (dict(interval=float("nan")), "interval"), (dict(interval=float("inf")), "interval")):
        with pytest.raises(ValueError, match=words):
            sicm.autoplace(fast=dev, **kw)
    for kw in (dict(budget=1.5), dict(interval=[1]), dict(half_life=True), dict(fast=[dev, "hbm"])):
        with pytest.raises(TypeError):
            sicm.autoplace(**kw)


def test_placements_over_devices_and_their_weights(dev):
    weights = sicm.interleave_weights([dev])
    assert len(weights) == 1 and 1 <= weights[0] <= 255
    for placement in ("bind", "interleave", "weighted", "preferred"):
        a = sicm.Arena([dev], placement=placement, name=placement)
        with a:
            x = np.arange(1 << 16, dtype=np.float64)
        assert set(sicm.where(x)) == {dev.node}
        a.move(dev)  # keeps the placement it was made with
        a.move([dev], placement="bind")
        assert x.sum() == (1 << 16) * ((1 << 16) - 1) / 2


def test_arrays_made_in_the_context_live_in_the_arena(dev):
    a = sicm.Arena(dev, name="ctx")
    before = a.stats()["allocated"]
    with a:
        assert handler_name() == "sicm_arena:ctx"
        x = np.arange(1 << 20, dtype=np.float64)
        y = np.zeros((256, 256))
        z = x[::2]  # a view: no data of its own
    assert handler_name() == "default_allocator"
    assert handler_name(x) == handler_name(y) == "sicm_arena:ctx"
    assert handler_name(z) is None and handler_name(z.base) == "sicm_arena:ctx"
    assert a.stats()["allocated"] - before >= x.nbytes + y.nbytes
    assert a.arrays == 2
    assert handler_name(np.ones(10)) == "default_allocator"
    assert x[12345] == 12345.0 and not y.any()
    x.resize(2 << 20, refcheck=False)  # realloc through the array's own handler
    assert x[12345] == 12345.0 and handler_name(x) == "sicm_arena:ctx"
    del x, y, z
    gc.collect()
    assert a.arrays == 0


def test_contexts_nest_and_unwind(dev):
    outer, inner = sicm.Arena(dev, name="outer"), sicm.Arena(dev, name="inner")
    with outer:
        with inner:
            assert handler_name() == "sicm_arena:inner"
        assert handler_name() == "sicm_arena:outer"
        try:
            with inner:
                raise KeyError("x")
        except KeyError:
            pass
        assert handler_name() == "sicm_arena:outer"
    assert handler_name() == "default_allocator"


def test_an_arena_outlives_its_arrays_never_the_reverse(dev):
    a = sicm.Arena(dev, name="lifetime")
    with a:
        x = np.full(1 << 18, 7.0)
    ref = weakref.ref(a)
    with pytest.raises(OSError) as e:
        a.close()
    assert e.value.errno == 16 and "1 arrays" in str(e.value)
    del a
    gc.collect()
    assert ref() is not None  # the array holds it
    assert x.sum() == 7.0 * (1 << 18)
    del x
    gc.collect()
    assert ref() is None


def test_close_is_explicit_and_final(dev):
    a = sicm.Arena(dev)
    with a:
        pass
    gc.collect()
    a.close()
    a.close()
    assert a.closed and "closed" in repr(a)
    with pytest.raises(ValueError):
        a.__enter__()
    with pytest.raises(ValueError):
        a.move(dev)
    with pytest.raises(ValueError):
        a.stats()


def test_maxsize_is_a_memory_error_not_a_crash(dev):
    a = sicm.Arena(dev, maxsize=1 << 20, name="small")
    with a:
        ok = np.ones(1 << 16)  # 512 KiB
        with pytest.raises(MemoryError):
            np.ones(1 << 18)  # 2 MiB
    assert ok.sum() == 1 << 16


def test_a_new_thread_starts_with_numpys_allocator(dev):
    a = sicm.Arena(dev, name="main")
    seen = {}

    def other():
        seen["name"] = handler_name()
        with sicm.Arena(dev, name="thread"):
            seen["array"] = handler_name(np.empty(100))

    with a:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert handler_name() == "sicm_arena:main"
    assert seen == {"name": "default_allocator", "array": "sicm_arena:thread"}


def test_threads_share_one_arena(dev):
    a = sicm.Arena(dev, name="shared")
    errors = []

    def work(k):
        try:
            with a:
                for i in range(300):
                    x = np.full(1000 + i, k, dtype=np.int64)
                    assert x.sum() == k * (1000 + i)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gc.collect()
    assert not errors and a.arrays == 0


def test_asyncio_tasks_keep_their_own_arena(dev):
    arenas = [sicm.Arena(dev, name="task%d" % i) for i in range(2)]

    async def task(i):
        with arenas[i]:
            made = []
            for _ in range(5):
                made.append(np.empty(64))
                await asyncio.sleep(0)
            return [handler_name(m) for m in made]

    async def main():
        return await asyncio.gather(task(0), task(1))

    names = asyncio.run(main())
    assert names == [["sicm_arena:task0"] * 5, ["sicm_arena:task1"] * 5]


def test_a_forked_child_allocates_and_the_parent_keeps_its_data(dev):
    a = sicm.Arena(dev, name="fork")
    with a:
        x = np.arange(100000)
        pid = os.fork()
        if pid == 0:  # the child: allocate, free, check, and leave at once
            ok = False
            try:
                y = np.arange(200000)
                ok = y.sum() == 199999 * 200000 // 2 and x.sum() == 99999 * 100000 // 2
                del y
            finally:
                os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert x.sum() == 99999 * 100000 // 2


def test_where_counts_the_pages_of_an_array(dev):
    with sicm.Arena(dev):
        x = np.ones(1 << 20, dtype=np.uint8)  # written: resident
    pages = sicm.where(x)
    assert sum(pages.values()) >= (1 << 20) // 4096 and set(pages) == {dev.node}
    assert sum(sicm.Arena(dev).residency().values()) == 0


def test_sites_group_arrays_by_the_line_that_made_them(dev):
    with sicm.site_arenas(threshold=4096) as sites:
        hot = [np.zeros(10000) for _ in range(3)]  # one line
        cold = np.ones(20000)  # numpy's Python code allocates: the caller's line counts
        tiny = np.zeros(10)  # below the threshold: numpy's allocator
    names = [a.name for a in sites.arenas]
    here = os.path.basename(__file__)
    assert len(names) == 2 and all(n.startswith("site:" + here[:20]) for n in names), names
    lines = sorted(int(n.rsplit(":", 1)[1]) for n in names)
    assert lines[1] == lines[0] + 1
    assert sites.arenas[0].stats()["allocated"] >= 3 * hot[0].nbytes
    assert handler_name(tiny) == "sicm_sites" and sites.unplaced == 0
    with pytest.raises(OSError):
        sites.arenas[0].close()  # its SiteArenas owns it
    del hot, cold, tiny


def test_eval_and_exec_share_the_arena_of_their_line(dev):
    # Each eval or exec compiles a new code object: the line is the site,
    # not the code object, or every call would make an arena until the
    # library ran out of them.
    with sicm.site_arenas(threshold=4096) as sites:
        keep = [eval("np.zeros(10000)") for _ in range(3000)]
        for _ in range(3000):
            exec("x = np.ones(10000)")
    names = [a.name for a in sites.arenas]
    assert names == ["site:<string>:1"], names
    assert all(handler_name(k) == "sicm_sites" for k in keep[:10])
    del keep
    after = sicm.Arena(dev)  # the library has arenas to spare
    after.close()


def test_site_names_reach_the_statistics_report(tmp_path):
    out = tmp_path / "stats.json"
    script = ("import numpy as np, sicm\n"
              "with sicm.site_arenas(threshold=1):\n"
              "    x = np.ones(5000)\n")
    env = dict(os.environ, SICM_STATS=str(out))
    subprocess.run([sys.executable, "-c", script], env=env, check=True)
    report = json.loads(out.read_text().splitlines()[-1])
    names = [a.get("name") for a in report["arenas"]]
    assert "site:<string>:3" in names, names


def test_the_placer_starts_once_and_stops(dev):
    try:
        placer = sicm.autoplace(fast=dev, interval=0.05, monitor_only=True)
    except OSError as e:
        if e.errno == 95:  # ENOTSUP: the kernel reports no referenced pages here
            pytest.skip(str(e))
        raise
    with placer:
        with pytest.raises(OSError) as e:
            sicm.autoplace(fast=dev)
        assert e.value.errno == 16
    with sicm.autoplace(fast=dev, interval=0.05, monitor_only=True, cpu=0.5):
        pass
    # The grammar's own forms, as in SICM_AUTOPLACE.
    with sicm.autoplace(fast=dev, interval="50ms", monitor_only=True, cpu="50%", budget="1M"):
        pass
    with sicm.autoplace(fast=dev, interval=0.05, monitor_only=True, sites=True, threshold=1) as p:
        x = np.ones(100)
        assert handler_name(x) == "sicm_sites" and p.sites.arenas
    assert handler_name() == "default_allocator"
