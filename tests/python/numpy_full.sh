#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# numpy_full.sh: the Python package's "numpy-full" tier (see run.sh).
exec sh "$(dirname "$0")/run.sh" numpy-full
