# SPDX-License-Identifier: BSD-3-Clause
"""shm_check.py: a POSIX shared-memory segment made by Python's
multiprocessing.shared_memory, checked page by page.

  shm_check.py create NAME MIB NODE   make the segment (not touching it),
      let two other processes write it, then read every byte back and ask
      the kernel (move_pages) where each page of this process's mapping is
  shm_check.py attach NAME MIB NODE HALF   (run by create)

The first writer is a fresh interpreter without LD_PRELOAD, so a page it
touches first lands where the segment's own policy says, not where a
preloaded process would put it; the second is a child forked by
multiprocessing.  Every process checks that all its pages are on NODE
(-1: not checked) and prints its counts.  Exits 1 on any mismatch."""
import ctypes
import multiprocessing
import os
import subprocess
import sys
from multiprocessing import resource_tracker, shared_memory

PAGE = os.sysconf("SC_PAGE_SIZE")
SYS_MOVE_PAGES = 279
libc = ctypes.CDLL(None, use_errno=True)


def page_nodes(buf):
    """The node of every page of buf (a writable buffer), from move_pages."""
    holder = ctypes.c_char.from_buffer(buf)
    base = ctypes.addressof(holder)
    n = len(buf) // PAGE
    pages = (ctypes.c_void_p * n)(*[base + i * PAGE for i in range(n)])
    status = (ctypes.c_int * n)()
    rc = libc.syscall(ctypes.c_long(SYS_MOVE_PAGES), ctypes.c_int(0), ctypes.c_ulong(n),
                      pages, None, status, ctypes.c_int(0))
    del holder
    if rc != 0:
        raise OSError(ctypes.get_errno(), "move_pages")
    return list(status)


def check_pages(who, buf, node):
    nodes = page_nodes(buf)
    counts = {}
    for s in nodes:
        counts[s] = counts.get(s, 0) + 1
    print(f"  {who}: pages per node {dict(sorted(counts.items()))}", flush=True)
    if node < 0:
        return True
    wrong = [i for i, s in enumerate(nodes) if s != node]
    if wrong:
        print(f"  {who}: {len(wrong)} of {len(nodes)} pages not on node {node}, "
              f"first at page {wrong[0]} (status {nodes[wrong[0]]})", flush=True)
    return not wrong


def fill(buf, start, end, seed):
    for at in range(start, end, PAGE):
        buf[at:at + 8] = ((at // PAGE) * 131 + seed).to_bytes(8, "little")


def write_half(name, half, node, ok):
    seg = shared_memory.SharedMemory(name=name)
    if ok is None:
        # Python before 3.13 would unlink the segment when this process,
        # which only attached, exits (its tracker registered it).
        resource_tracker.unregister(seg._name, "shared_memory")
    size = seg.size - seg.size % PAGE
    mid = size // 2 // PAGE * PAGE
    start, end = (0, mid) if half == 0 else (mid, size)
    fill(seg.buf, start, end, 7)
    good = check_pages(f"writer of half {half} (pid {os.getpid()})", seg.buf[start:end], node)
    seg.close()
    if ok is not None:
        ok.value = int(good)
    return good


def create(name, mib, node):
    size = mib << 20
    seg = shared_memory.SharedMemory(name=name, create=True, size=size)
    try:
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        first = subprocess.run([sys.executable, __file__, "attach", name, str(mib), str(node), "0"],
                               env=env).returncode == 0
        ok = multiprocessing.get_context("fork").Value("i", 0)
        child = multiprocessing.get_context("fork").Process(target=write_half,
                                                              args=(name, 1, node, ok))
        child.start()
        child.join()
        second = child.exitcode == 0 and ok.value == 1
        bad = [at for at in range(0, size, PAGE)
               if int.from_bytes(seg.buf[at:at + 8], "little") != (at // PAGE) * 131 + 7]
        print(f"  creator (pid {os.getpid()}): {size // PAGE - len(bad)} of {size // PAGE} "
              "pages hold what the writers wrote", flush=True)
        mine = check_pages(f"creator (pid {os.getpid()})", seg.buf, node)
        return first and second and not bad and mine
    finally:
        seg.close()
        seg.unlink()


def main():
    mode, name, mib, node = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if mode == "create":
        return 0 if create(name, mib, node) else 1
    return 0 if write_half(name, int(sys.argv[5]), node, None) else 1


if __name__ == "__main__":
    sys.exit(main())
