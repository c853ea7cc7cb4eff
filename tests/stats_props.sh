#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# stats_props.sh: the `make check` entry for the properties of
# tools/sicm-stats (tests/stats_tool_props.py), with the Python configure
# found (Debian's, where python3-hypothesis is); status 77 (skip) without
# Hypothesis unless SICM_PYTHON_REQUIRED=1.
exec "${SICM_PYTHON:-python3}" "${SICM_TOP_SRCDIR:?}/tests/stats_tool_props.py"
