# SPDX-License-Identifier: BSD-3-Clause
"""Spack recipe of libsicm (Spack's `sicm` is LANL's older project)."""

from spack_repo.builtin.build_systems.autotools import AutotoolsPackage

from spack.package import *


class Libsicm(AutotoolsPackage):
    """Arenas bound to NUMA memory devices (DRAM, HBM, CXL or NVDIMM capacity
    memory): a program binds each group of data that travels together to a
    device and moves the whole arena to another with one call, every pointer
    staying valid. Built on jemalloc arenas, with a memkind-compatible
    library, an LD_PRELOAD library, MPI libraries and Python and Fortran
    bindings."""

    # No release is published yet: the host is reserved (.invalid), so Spack
    # takes libsicm-VERSION.tar.gz (`make dist`) from a site's mirror, and the
    # version has no checksum until the first published release gets one
    # from `spack checksum` (docs/packaging.md).
    url = "https://libsicm.invalid/releases/libsicm-0.1.0.tar.gz"

    license("BSD-3-Clause")

    version("0.1.0")

    variant(
        "dlopen",
        default=True,
        description="libsicm's own prefixed jemalloc, built from the jemalloc release: "
        "libsicm loads with dlopen (OpenMP runtimes, plug-ins) and never replaces "
        "the program's malloc; ~dlopen links Spack's jemalloc instead",
    )
    variant(
        "mpi",
        default="none",
        values=("none", "openmpi", "mpich"),
        multi=True,
        description="Build libsicm-mpi for these MPIs",
    )
    variant("memkind", default=True, description="Install the memkind-compatible libmemkind.so.0")
    variant("python", default=False, description="Install the Python package sicm (numpy)")
    variant("fortran", default=False, description="Build the Fortran module sicm")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("pkgconfig", type="build")

    depends_on("numactl")
    depends_on("hwloc@2.1:")
    depends_on("jemalloc@5.2:5.3", when="~dlopen")
    depends_on("openmpi", when="mpi=openmpi")
    depends_on("mpich", when="mpi=mpich")
    extends("python", when="+python")
    depends_on("py-numpy", type=("build", "run"), when="+python")
    depends_on("py-setuptools", type="build", when="+python")
    depends_on("py-pip", type="build", when="+python")

    conflicts("platform=darwin", msg="libsicm places memory with Linux's NUMA calls")
    conflicts("platform=windows", msg="libsicm places memory with Linux's NUMA calls")

    # The jemalloc release the private build is made from, unpacked in
    # jemalloc-source/ as in the Debian source package.
    resource(
        name="jemalloc",
        url="https://github.com/jemalloc/jemalloc/releases/download/5.3.0/jemalloc-5.3.0.tar.bz2",
        sha256="2db82d1e7119df3e71b7640219b6dfe84789bc0537983c3b7ac4f7189aecfeaa",
        placement="jemalloc-source",
        when="+dlopen",
    )

    def configure_args(self):
        spec = self.spec
        args = []
        if spec.satisfies("+dlopen"):
            args.append(
                "--with-jemalloc-source=" + join_path(self.stage.source_path, "jemalloc-source")
            )
        else:
            args.append("--with-jemalloc=system")
        # Each MPI by its installation directory (its bin/mpicc).
        mpis = [m for m in spec.variants["mpi"].value if m != "none"]
        args.append("--with-mpi=" + (",".join(spec[m].prefix for m in mpis) if mpis else "no"))
        if spec.satisfies("+python"):
            args += ["--enable-python", "--with-pythondir=" + python_platlib]
            args.append("PYTHON_NUMPY=" + spec["python"].command.path)
        if spec.satisfies("~fortran"):
            args.append("FC=no")
        return args

    @run_after("install")
    def drop_memkind(self):
        # The drop-in lives in its own directory; ~memkind leaves it out.
        if self.spec.satisfies("~memkind"):
            remove_linked_tree(join_path(self.prefix.lib, "sicm", "memkind"))
            remove_linked_tree(join_path(self.prefix.include, "sicm", "memkind"))
            remove(join_path(self.prefix.lib, "pkgconfig", "sicm-memkind.pc"))
