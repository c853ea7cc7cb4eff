/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * selftest.c - checks that a sicm-guest VM really has the NUMA topology the
 * libsicm tests rely on (default: the hmat4 topology).
 *
 * Owns the guest harness self-test program; it uses only libnuma and hwloc,
 * no project code.  Checks:
 *   (a) nodes:     libnuma and sysfs both report --nodes N nodes (default 4);
 *   (b) hmat:      hwloc reports HMAT bandwidth and latency for every node,
 *                  and, seen from node 0's CPUs, bandwidth(node 2) >
 *                  bandwidth(node 0) > bandwidth(node 3) (skipped by --no-hmat);
 *   (c) placement: pages mbind()ed (MPOL_BIND) to --bind-node B (default 2)
 *                  are found by move_pages() on --expect-node E (default B).
 * Exits 0 if all checks pass, 1 naming the failed check otherwise, 2 on usage.
 *
 * Build: cc -o selftest selftest.c -lhwloc -lnuma
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <hwloc.h>
#include <numa.h>
#include <numaif.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NPAGES 8

static int fail(const char *check, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "selftest: check (%s) FAILED: ", check);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

static int sysfs_node_count(void)
{
    DIR *d = opendir("/sys/devices/system/node");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9')
            n++;
    closedir(d);
    return n;
}

static int check_nodes(int want)
{
    int libnuma, sysfs;

    if (numa_available() < 0)
        return fail("a: nodes", "libnuma says NUMA is not available");
    libnuma = numa_num_configured_nodes();
    sysfs = sysfs_node_count();
    printf("(a) nodes: libnuma %d, sysfs %d, expected %d\n", libnuma, sysfs, want);
    if (libnuma != want || sysfs != want)
        return fail("a: nodes", "expected %d NUMA nodes, libnuma sees %d, sysfs sees %d",
                    want, libnuma, sysfs);
    return 0;
}

/* Prints every initiator hwloc knows for @node and attribute @id. */
static void print_initiators(hwloc_topology_t topo, hwloc_memattr_id_t id, const char *name,
                             hwloc_obj_t node)
{
    struct hwloc_location locs[16];
    hwloc_uint64_t values[16];
    unsigned i, nr = 16;

    if (hwloc_memattr_get_initiators(topo, id, node, 0, &nr, locs, values) < 0 || nr == 0) {
        printf("    node %u %s: no initiators\n", node->os_index, name);
        return;
    }
    for (i = 0; i < nr && i < 16; i++) {
        char *where = NULL;

        if (locs[i].type == HWLOC_LOCATION_TYPE_CPUSET)
            hwloc_bitmap_list_asprintf(&where, locs[i].location.cpuset);
        else if (asprintf(&where, "%s#%u", hwloc_obj_type_string(locs[i].location.object->type),
                          locs[i].location.object->os_index) < 0)
            where = NULL;
        printf("    node %u %s = %llu from cpus %s\n", node->os_index, name,
               (unsigned long long)values[i], where ? where : "?");
        free(where);
    }
}

/* Value of attribute @id for target @node seen from the CPUs of node 0. */
static int value_from_node0(hwloc_topology_t topo, hwloc_memattr_id_t id, unsigned node,
                            hwloc_uint64_t *value)
{
    hwloc_obj_t target = hwloc_get_numanode_obj_by_os_index(topo, node);
    hwloc_obj_t node0 = hwloc_get_numanode_obj_by_os_index(topo, 0);
    struct hwloc_location initiator;

    if (!target || !node0)
        return -1;
    initiator.type = HWLOC_LOCATION_TYPE_CPUSET;
    initiator.location.cpuset = node0->cpuset;
    return hwloc_memattr_get_value(topo, id, target, &initiator, 0, value);
}

static int check_hmat(void)
{
    static const unsigned targets[] = { 0, 2, 3 };
    hwloc_uint64_t bw[4], lat[4];
    hwloc_topology_t topo;
    hwloc_obj_t node = NULL;
    unsigned i;
    int rc = 0;

    if (hwloc_topology_init(&topo) < 0 || hwloc_topology_load(topo) < 0)
        return fail("b: hmat", "cannot load the hwloc topology");
    printf("(b) hmat: hwloc memory attributes (best initiators, as exposed by Linux):\n");
    while ((node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node))) {
        print_initiators(topo, HWLOC_MEMATTR_ID_BANDWIDTH, "bandwidth MiB/s", node);
        print_initiators(topo, HWLOC_MEMATTR_ID_LATENCY, "latency ns", node);
    }
    for (i = 0; i < sizeof(targets) / sizeof(targets[0]) && rc == 0; i++) {
        unsigned t = targets[i];

        if (value_from_node0(topo, HWLOC_MEMATTR_ID_BANDWIDTH, t, &bw[t]) < 0 ||
            value_from_node0(topo, HWLOC_MEMATTR_ID_LATENCY, t, &lat[t]) < 0)
            rc = fail("b: hmat", "no HMAT bandwidth/latency for node %u from node 0's cpus", t);
    }
    if (rc == 0) {
        printf("    from node 0's cpus: bandwidth node2 %llu > node0 %llu > node3 %llu ?\n",
               (unsigned long long)bw[2], (unsigned long long)bw[0], (unsigned long long)bw[3]);
        if (!(bw[2] > bw[0] && bw[0] > bw[3]))
            rc = fail("b: hmat", "bandwidth order from node 0 is not node2 > node0 > node3");
        else if (lat[0] == 0 || lat[2] == 0 || lat[3] == 0)
            rc = fail("b: hmat", "zero latency reported");
    }
    hwloc_topology_destroy(topo);
    return rc;
}

static int check_placement(int bind_node, int expect_node)
{
    long pagesize = sysconf(_SC_PAGESIZE);
    unsigned long mask[16] = { 0 };
    void *pages[NPAGES];
    int status[NPAGES];
    char *buf;
    int i, rc = 0;

    if (bind_node < 0 || bind_node >= (int)(sizeof(mask) * 8))
        return fail("c: placement", "bind node %d out of range", bind_node);
    buf = mmap(NULL, NPAGES * pagesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
    if (buf == MAP_FAILED)
        return fail("c: placement", "mmap: %s", strerror(errno));
    mask[bind_node / (8 * sizeof(mask[0]))] |= 1UL << (bind_node % (8 * sizeof(mask[0])));
    if (mbind(buf, NPAGES * pagesize, MPOL_BIND, mask, sizeof(mask) * 8, 0) < 0) {
        rc = fail("c: placement", "mbind to node %d: %s", bind_node, strerror(errno));
        goto out;
    }
    memset(buf, 0x5a, NPAGES * pagesize);
    for (i = 0; i < NPAGES; i++)
        pages[i] = buf + i * pagesize;
    if (move_pages(0, NPAGES, pages, NULL, status, 0) < 0) {
        rc = fail("c: placement", "move_pages: %s", strerror(errno));
        goto out;
    }
    printf("(c) placement: %d pages bound to node %d, expected on node %d, found on:",
           NPAGES, bind_node, expect_node);
    for (i = 0; i < NPAGES; i++)
        printf(" %d", status[i]);
    printf("\n");
    for (i = 0; i < NPAGES && rc == 0; i++)
        if (status[i] != expect_node)
            rc = fail("c: placement", "page %d is on node %d, expected node %d", i, status[i],
                      expect_node);
out:
    munmap(buf, NPAGES * pagesize);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: selftest [--nodes N] [--no-hmat] [--bind-node N] [--expect-node M]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int nodes = 4, bind_node = 2, expect_node = -1, hmat = 1;
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-hmat") == 0)
            hmat = 0;
        else if (i + 1 < argc && strcmp(argv[i], "--nodes") == 0)
            nodes = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--bind-node") == 0)
            bind_node = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--expect-node") == 0)
            expect_node = atoi(argv[++i]);
        else
            return usage();
    }
    if (expect_node < 0)
        expect_node = bind_node;
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (check_nodes(nodes) || (hmat && check_hmat()) || check_placement(bind_node, expect_node))
        return 1;
    printf("selftest: all checks passed\n");
    return 0;
}
