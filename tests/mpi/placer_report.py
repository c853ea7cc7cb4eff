# SPDX-License-Identifier: BSD-3-Clause
"""placer_report.py STATS.json NPROC [FREED.json]: the SICM_STATS report of
tests/mpi/mpi_placer_check (run by placer.sh and cluster.sh).  Each of the
NPROC processes' lines must name its windows' arenas (mpi:win#1 the one
the rank wrote first, mpi:win#2 the one its partner puts into) in the
placer's decisions: the last decision on #2 moved it to node 2 as hot,
and the last on #1 moved it off node 2.  FREED.json, SICM_MPI_REPORT's
lines, must then say the same of each window's pages when it was freed.  Prints every window decision."""
import json
import sys

lines = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
failed = 0
for line in lines:
    who = f"pid {line.get('pid')} rank {line.get('rank')} on {line.get('host')}"
    last = {}
    for d in line.get("decisions", []):
        if d["name"].startswith("mpi:win#"):
            print(f"  {who}: {d['name']}: node {d['from']} -> {d['to']}, error {d['error']}: {d['why']}")
            last[d["name"].split()[0]] = d
    cold, hot = last.get("mpi:win#1"), last.get("mpi:win#2")
    ok = (hot is not None and hot["to"] == 2 and hot["error"] == 0 and "hot" in hot["why"]
          and cold is not None and cold["from"] == 2 and cold["to"] != 2 and cold["error"] == 0)
    print(("ok: " if ok else "FAILED: ") + f"{who}: the window put into went to node 2 as hot, "
          "displacing the other")
    failed += not ok
if len(sys.argv) > 3:
    freed = [json.loads(line) for line in open(sys.argv[3]) if line.strip()]
    for f in freed:
        print(f"  rank {f['rank']} on {f['host']}: {f['arena']} freed, resident by node {f['resident']}")
    wins = [f for f in freed if f["arena"].startswith("mpi:win#")]
    put_into = [f for f in wins if f["arena"].startswith("mpi:win#2 ")]
    local = [f for f in wins if f["arena"].startswith("mpi:win#1 ")]
    ok = (len(put_into) == len(local) == int(sys.argv[2])
          and all(set(f["resident"]) == {"2"} for f in put_into)
          and all(f["resident"] and "2" not in f["resident"] for f in local))
    print(("ok: " if ok else "FAILED: ") + "SICM_MPI_REPORT: each window freed where the placer "
          "left it, the put-into one all on node 2")
    failed += not ok
if len(lines) != int(sys.argv[2]):
    print(f"FAILED: {len(lines)} reports, not {sys.argv[2]}")
    failed += 1
sys.exit(1 if failed else 0)
