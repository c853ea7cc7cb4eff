# SPDX-License-Identifier: BSD-3-Clause
"""Builds the Python package `sicm` against an installed libsicm.

Where libsicm is: SICM_INCLUDE_DIR and SICM_LIBRARY_DIR when set (the
build tree's include/ and src/.libs, as `make check` does), otherwise
pkg-config's `sicm` (PKG_CONFIG_PATH for a prefix of your own).  The
extension records the library directory (SICM_RUNTIME_DIR when it differs,
as in a staged install) as its run path, so Python finds libsicm without
LD_LIBRARY_PATH; not a directory the dynamic linker searches anyway (a
distribution's /usr/lib/<triplet>), where a run path is only noise.
Offline: pip install --no-build-isolation .
"""
import os
import shlex
import subprocess

import numpy
from setuptools import Extension, setup


def sicm_dirs():
    inc, lib = os.environ.get("SICM_INCLUDE_DIR"), os.environ.get("SICM_LIBRARY_DIR")
    if inc and lib:
        return [inc], [lib]
    try:
        out = subprocess.run(["pkg-config", "--cflags-only-I", "--libs-only-L", "sicm"],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("sicm: libsicm not found: install it (make install), set PKG_CONFIG_PATH "
                         "to its lib/pkgconfig, or set SICM_INCLUDE_DIR and SICM_LIBRARY_DIR (%s)" % e)
    words = shlex.split(out)
    return [w[2:] for w in words if w.startswith("-I")], [w[2:] for w in words if w.startswith("-L")]


def run_path(dirs):
    # The dynamic linker's own directories: those ldconfig lists.
    try:
        out = subprocess.run(["ldconfig", "-p"], check=True, capture_output=True, text=True).stdout
        system = {os.path.realpath(os.path.dirname(line.split("=>")[-1].strip()))
                  for line in out.splitlines() if "=>" in line}
    except (OSError, subprocess.CalledProcessError):
        system = set()
    return [d for d in dirs if os.path.realpath(d) not in system]


include_dirs, library_dirs = sicm_dirs()
extra = shlex.split(os.environ.get("SICM_PY_CFLAGS", ""))
setup(
    name="sicm",
    version="0.1.0",
    description="numpy arrays in libsicm arenas bound to memory devices (DRAM, HBM, capacity memory)",
    license="BSD-3-Clause",
    packages=["sicm"],
    python_requires=">=3.9",
    install_requires=["numpy>=1.22"],
    ext_modules=[Extension(
        "sicm._sicm",
        sources=["src/module.c", "src/device.c", "src/handler.c", "src/arena.c", "src/sites.c"],
        depends=["src/sicm_py.h"],
        include_dirs=[numpy.get_include()] + include_dirs,
        library_dirs=library_dirs,
        runtime_library_dirs=run_path([os.environ["SICM_RUNTIME_DIR"]] if os.environ.get("SICM_RUNTIME_DIR")
                                      else library_dirs),
        libraries=["sicm", "numa"],
        extra_compile_args=["-std=gnu11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"] + extra,
        extra_link_args=extra,
    )],
)
