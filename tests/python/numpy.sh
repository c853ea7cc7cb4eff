#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# numpy.sh: the Python package's "numpy-quick" tier (see run.sh).
exec sh "$(dirname "$0")/run.sh" numpy-quick
