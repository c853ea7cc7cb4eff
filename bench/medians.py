# SPDX-License-Identifier: BSD-3-Clause
"""medians.py: what the ratio scripts read from a Google Benchmark JSON
file — the median real time of each benchmark in nanoseconds, the names
of those that reported an error, and the run's context."""
import json

UNIT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def load(path):
    with open(path) as f:
        data = json.load(f)
    times, errors = {}, set()
    for b in data["benchmarks"]:
        name = (b.get("run_name") or b["name"]).replace("/real_time", "").replace("/manual_time", "")
        if b.get("error_occurred"):
            errors.add(name)
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        times[name] = b["real_time"] * UNIT[b.get("time_unit", "ns")]
    return times, errors, data.get("context", {})
