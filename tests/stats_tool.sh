#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# stats_tool.sh: the `make check` entry for tools/sicm-stats
# (tests/stats_tool_cases.py), with the Python configure found (the one with numpy,
# Debian's, where matplotlib is too).
exec "${SICM_PYTHON:-python3}" "${SICM_TOP_SRCDIR:?}/tests/stats_tool_cases.py"
