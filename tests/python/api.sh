#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# api.sh: the Python package's "api" tier (see run.sh).
exec sh "$(dirname "$0")/run.sh" api
