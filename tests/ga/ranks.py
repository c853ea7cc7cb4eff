# SPDX-License-Identifier: BSD-3-Clause
"""ranks.py FILE: a 2-rank job's output, as the launcher tagged it (Open
MPI's --tag-output "[1,R]<stdout>:", MPICH's -prepend-rank "[R] " before
every chunk a rank wrote), put back together as each rank's own stream and
printed rank by rank, each line as "R: text".  Chunks of one rank that the
launcher tagged mid-line are joined again, so the result does not depend
on how the ranks' writes interleaved; text without a tag is rank "-"."""
import re
import sys

TAG = re.compile(r"\[(?:\d+,)?(\d+)\](?:<std(?:out|err)>:| )?")
streams = {}
for raw in open(sys.argv[1], errors="replace"):
    at, rank = 0, "-"
    for m in TAG.finditer(raw):
        if m.start() > at:
            streams.setdefault(rank, []).append(raw[at:m.start()])
        rank, at = m.group(1), m.end()
    streams.setdefault(rank, []).append(raw[at:])
for rank in sorted(streams):
    for line in "".join(streams[rank]).splitlines():
        print(f"{rank}: {line}")
