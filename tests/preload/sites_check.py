# SPDX-License-Identifier: BSD-3-Clause
# sites_check.py: Debian's python3, which never heard of libsicm, with three
# 16 MiB buffers made by three different constructors (so three C call
# sites inside the interpreter): one touched over and over, two left alone.
# Run by tests/preload/guest.sh under libsicm-preload.so with sites= and
# SICM_AUTOPLACE.  After `seconds`, prints the node of each buffer's pages
# (move_pages through libnuma, by ctypes) as "NAME node:pages ..."; the
# script judges.
import array
import ctypes
import sys
import time

BYTES, PAGE = 16 << 20, 4096
field = bytearray(BYTES)                  # bytearray_new: the hot one
history = array.array("b", bytes(BYTES))  # array's own buffer
scratch = (ctypes.c_char * BYTES)()       # ctypes' buffer


def address(buf):
    return ctypes.addressof((ctypes.c_char * BYTES).from_buffer(buf))


numa = ctypes.CDLL("libnuma.so.1", use_errno=True)


def census(name, buf):
    start = address(buf) & ~(PAGE - 1)
    n = (address(buf) + BYTES - start + PAGE - 1) // PAGE
    pages = (ctypes.c_void_p * n)(*[start + i * PAGE for i in range(n)])
    status = (ctypes.c_int * n)()
    if numa.move_pages(0, n, pages, None, status, 0) != 0:
        sys.exit("move_pages: errno %d" % ctypes.get_errno())
    count = {}
    for s in status:
        if s >= 0:
            count[s] = count.get(s, 0) + 1
    print(name, " ".join("%d:%d" % (node, count[node]) for node in sorted(count)), flush=True)


for buf in (history, scratch):  # written once: resident, then idle
    view = memoryview(buf).cast("B")
    for off in range(0, BYTES, PAGE):
        view[off] = 1
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for off in range(0, BYTES, PAGE):
        field[off] = (field[off] + 1) & 0xFF
    time.sleep(0.02)
census("field", field)
census("history", history)
census("scratch", scratch)
