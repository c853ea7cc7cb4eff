/* SPDX-License-Identifier: BSD-3-Clause */
// test_topology_share.cc: sicm_init_with(SICM_INIT_SHARE_TOPOLOGY) — the
// first process publishes the node's topology, later ones adopt it and see
// the same devices; stale, damaged, foreign or unreachable files and a
// stuck writer make a process discover on its own, never fail.  Also runs
// in the 4-node HMAT guest, where adopted memory attributes must give the
// same performance values and kinds as discovery.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "sicm_test.h"

namespace {

using sicm_test::ScopedEnv;

// Our header's layout, as device_share.c writes it: the mapping address of
// hwloc's part is the u64 at byte 24.
constexpr off_t kAddressOffset = 24;

class TopologyShare : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sicm-topo-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(tmpl));
    dir_ = tmpl;
    dir_env_ = std::make_unique<ScopedEnv>("SICM_TOPOLOGY_DIR", dir_.c_str());
    share_env_ = std::make_unique<ScopedEnv>("SICM_SHARE_TOPOLOGY", nullptr);
  }
  void TearDown() override {
    for (const std::string &f : Files()) unlink((dir_ + "/" + f).c_str());
    rmdir(dir_.c_str());
  }

  std::vector<std::string> Files() const {
    std::vector<std::string> out;
    DIR *d = opendir(dir_.c_str());
    if (d == nullptr) return out;
    while (struct dirent *e = readdir(d))
      if (e->d_name[0] != '.') out.push_back(e->d_name);
    closedir(d);
    return out;
  }

  // The published topology file ("" if none).
  std::string TopologyFile() const {
    for (const std::string &f : Files())
      if (f.find('.') == std::string::npos) return dir_ + "/" + f;
    return "";
  }

  // One sicm_init_with .. sicm_fini; returns the topology source, or -1.
  int InitSource(unsigned flags, std::string *devices = nullptr) {
    if (sicm_init_with(flags) != 0) {
      ADD_FAILURE() << sicm_error_detail();
      return -1;
    }
    int source = sicm_init_topology_source();
    if (devices != nullptr) *devices = DeviceSignature();
    EXPECT_EQ(0, sicm_fini());
    return source;
  }

  static std::string DeviceSignature() {
    std::string s;
    const sicm_device_list *l = sicm_devices();
    for (unsigned i = 0; i < l->count; i++) {
      const sicm_device &d = l->devices[i];
      s += std::to_string(d.node) + " kind " + std::to_string(d.kind) + "/" +
           std::to_string(d.kind_source) + " page " + std::to_string(d.page_size) + " cap " +
           std::to_string(d.capacity) + " cpus " + std::to_string(d.has_cpus) + " bw " +
           std::to_string(d.perf.read_bandwidth) + "/" + std::to_string(d.perf.write_bandwidth) +
           " lat " + std::to_string(d.perf.read_latency) + "/" +
           std::to_string(d.perf.write_latency) + " from " + std::to_string(d.perf.initiator) +
           "/" + std::to_string(d.perf.source) + "\n";
    }
    return s;
  }

  static void FlipByte(const std::string &path, off_t offset) {
    int fd = open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    unsigned char c;
    ASSERT_EQ(1, pread(fd, &c, 1, offset));
    c ^= 0x5a;
    ASSERT_EQ(1, pwrite(fd, &c, 1, offset));
    close(fd);
  }

  std::string dir_;
  std::unique_ptr<ScopedEnv> dir_env_, share_env_;
};

TEST_F(TopologyShare, FirstProcessPublishesAndLaterOnesAdoptTheSameDevices) {
  std::string discovered, published, adopted;
  ASSERT_EQ(SICM_TOPOLOGY_DISCOVERED, InitSource(0, &discovered));
  ASSERT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY, &published));
  std::string file = TopologyFile();
  ASSERT_NE("", file);
  struct stat st;
  ASSERT_EQ(0, stat(file.c_str(), &st));
  EXPECT_EQ(0600u, st.st_mode & 07777);
  EXPECT_EQ(geteuid(), st.st_uid);
  EXPECT_EQ(SICM_TOPOLOGY_ADOPTED, InitSource(SICM_INIT_SHARE_TOPOLOGY, &adopted));
  EXPECT_EQ(SICM_TOPOLOGY_ADOPTED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  EXPECT_EQ(discovered, published);
  EXPECT_EQ(discovered, adopted);
  for (const std::string &f : Files())
    EXPECT_EQ(std::string::npos, f.find(".tmp")) << f;
}

TEST_F(TopologyShare, WithoutTheFlagNothingIsWritten) {
  EXPECT_EQ(SICM_TOPOLOGY_DISCOVERED, InitSource(0));
  EXPECT_TRUE(Files().empty());
}

TEST_F(TopologyShare, EnvironmentOverridesTheFlag) {
  {
    ScopedEnv on("SICM_SHARE_TOPOLOGY", "1");
    EXPECT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(0));
  }
  ScopedEnv off("SICM_SHARE_TOPOLOGY", "0");
  EXPECT_EQ(SICM_TOPOLOGY_DISCOVERED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
}

TEST_F(TopologyShare, BadCallsAreErrors) {
  errno = 0;
  EXPECT_EQ(-1, sicm_init_with(2));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_init_topology_source());
  EXPECT_EQ(EPERM, errno);
}

TEST_F(TopologyShare, FileOfAnotherBootIsReplaced) {
  ASSERT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  std::string file = TopologyFile(), text(4096, '\0');
  int fd = open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(4096, pread(fd, &text[0], 4096, 0));
  close(fd);
  size_t boot = text.find("boot=");
  ASSERT_NE(std::string::npos, boot);
  FlipByte(file, (off_t)boot + 5);
  EXPECT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  EXPECT_EQ(SICM_TOPOLOGY_ADOPTED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
}

TEST_F(TopologyShare, DamagedFileIsReplaced) {
  ASSERT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  std::string file = TopologyFile();
  // A byte of hwloc's part: the checksum catches it before hwloc reads it.
  FlipByte(file, 4096 + 200);
  EXPECT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  // Cut short.
  ASSERT_EQ(0, truncate(file.c_str(), 4096 + 4096));
  EXPECT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  // Garbage of a plausible size.
  struct stat st;
  ASSERT_EQ(0, stat(file.c_str(), &st));
  std::vector<char> junk((size_t)st.st_size);
  for (size_t i = 0; i < junk.size(); i++) junk[i] = (char)(i * 131 + 7);
  int fd = open(file.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ((ssize_t)junk.size(), pwrite(fd, junk.data(), junk.size(), 0));
  close(fd);
  EXPECT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  EXPECT_EQ(SICM_TOPOLOGY_ADOPTED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
}

TEST_F(TopologyShare, FileOthersCanWriteIsNeitherAdoptedNorReplaced) {
  ASSERT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  std::string file = TopologyFile();
  ASSERT_EQ(0, chmod(file.c_str(), 0666));
  struct stat before, after;
  ASSERT_EQ(0, stat(file.c_str(), &before));
  EXPECT_EQ(SICM_TOPOLOGY_DISCOVERED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  ASSERT_EQ(0, stat(file.c_str(), &after));
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(0666u, after.st_mode & 07777);
  if (geteuid() == 0) {  // another user's file
    ASSERT_EQ(0, chmod(file.c_str(), 0600));
    ASSERT_EQ(0, chown(file.c_str(), 65534, 65534));
    EXPECT_EQ(SICM_TOPOLOGY_DISCOVERED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
    ASSERT_EQ(0, stat(file.c_str(), &after));
    EXPECT_EQ(65534u, after.st_uid);
  }
}

// Whatever another user puts at the file's or the lock file's name (the
// names are predictable): sicm_init returns at once, having discovered on
// its own, and says why once per sicm_init (here two).
TEST_F(TopologyShare, NonFilesAtTheNamesMeanPromptDiscoveryAndOneMessage) {
  ASSERT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  const std::string file = TopologyFile();
  ASSERT_NE("", file);
  struct Thing {
    const char *what;
    std::function<int(const std::string &)> make;
  };
  const Thing things[] = {
      {"FIFO", [](const std::string &p) { return mkfifo(p.c_str(), 0666); }},
      {"socket",
       [](const std::string &p) {
         int s = socket(AF_UNIX, SOCK_STREAM, 0);
         struct sockaddr_un a = {};
         a.sun_family = AF_UNIX;
         snprintf(a.sun_path, sizeof a.sun_path, "%s", p.c_str());
         int rc = bind(s, (struct sockaddr *)&a, sizeof a);
         close(s);
         return rc;
       }},
      {"device node",
       [](const std::string &p) { return geteuid() == 0 ? mknod(p.c_str(), S_IFCHR | 0666, makedev(1, 3)) : mkfifo(p.c_str(), 0600); }},
      {"symbolic link", [](const std::string &p) { return symlink("/dev/zero", p.c_str()); }},
      {"directory", [](const std::string &p) { return mkdir(p.c_str(), 0700); }},
  };
  for (const std::string &name : {file, file + ".lock"})
    for (const Thing &t : things) {
      unlink(file.c_str());
      unlink((file + ".lock").c_str());
      ASSERT_EQ(0, t.make(name)) << t.what << ": " << strerror(errno);
      if (geteuid() == 0) lchown(name.c_str(), 65534, 65534);  // another user's
      sicm_test::ChildRun run = sicm_test::RunInChild([] {
        if (sicm_init_with(SICM_INIT_SHARE_TOPOLOGY) != 0) return 90;
        int source = sicm_init_topology_source();
        sicm_fini();
        if (sicm_init_with(SICM_INIT_SHARE_TOPOLOGY) != 0) return 91;
        return source == sicm_init_topology_source() ? source : 92;
      });
      std::string where = std::string(t.what) + " at " + name;
      EXPECT_EQ(SICM_TOPOLOGY_DISCOVERED, run.status) << where << "\n" << run.err;
      EXPECT_LT(run.seconds, 3.0) << where;  // the lock file is waited on for at most 2 s
      // At the file's own name nothing is waited on: the two inits finish
      // before the 2 s a lock file is waited on, whatever discovery costs.
      if (name == file) {
        EXPECT_LT(run.seconds, 2.0) << where;
      }
      EXPECT_EQ(2, sicm_test::Occurrences(run.err, "discovers the topology itself")) << where << "\n" << run.err;
      EXPECT_NE(std::string::npos, run.err.find(name)) << where << "\n" << run.err;
      rmdir(name.c_str());
      unlink(name.c_str());
    }
}

TEST_F(TopologyShare, TakenAddressMeansDiscoveryAndTheFileStays) {
  ASSERT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  std::string file = TopologyFile();
  uint64_t address = 0;
  int fd = open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ((ssize_t)sizeof address, pread(fd, &address, sizeof address, kAddressOffset));
  close(fd);
  ASSERT_NE(0u, address);
  void *taken = mmap((void *)(uintptr_t)address, 4096, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ((void *)(uintptr_t)address, taken);
  struct stat before, after;
  ASSERT_EQ(0, stat(file.c_str(), &before));
  EXPECT_EQ(SICM_TOPOLOGY_DISCOVERED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  ASSERT_EQ(0, stat(file.c_str(), &after));
  EXPECT_EQ(before.st_ino, after.st_ino);  // others can still adopt it
  munmap(taken, 4096);
  EXPECT_EQ(SICM_TOPOLOGY_ADOPTED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
}

TEST_F(TopologyShare, StuckWriterMeansDiscoveryAfterTheWait) {
  ASSERT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  std::string file = TopologyFile();
  ASSERT_EQ(0, unlink(file.c_str()));
  int lock = open((file + ".lock").c_str(), O_RDWR);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(0, flock(lock, LOCK_EX));  // another description: it conflicts
  EXPECT_EQ(SICM_TOPOLOGY_DISCOVERED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
  EXPECT_EQ("", TopologyFile());
  close(lock);
  EXPECT_EQ(SICM_TOPOLOGY_PUBLISHED, InitSource(SICM_INIT_SHARE_TOPOLOGY));
}

TEST_F(TopologyShare, RanksStartingTogetherDiscoverOnce) {
  constexpr int kRanks = 8;
  int go[2];
  ASSERT_EQ(0, pipe(go));
  std::vector<pid_t> pids;
  for (int i = 0; i < kRanks; i++) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      char c;
      close(go[1]);
      if (read(go[0], &c, 1) != 0) _exit(100);
      int rc = sicm_init_with(SICM_INIT_SHARE_TOPOLOGY);
      _exit(rc == 0 ? sicm_init_topology_source() : 101);
    }
    pids.push_back(pid);
  }
  close(go[0]);
  close(go[1]);  // every rank starts now
  int counts[3] = {0, 0, 0};
  for (pid_t pid : pids) {
    int status;
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    ASSERT_TRUE(WIFEXITED(status));
    int source = WEXITSTATUS(status);
    ASSERT_LE(source, 2) << "rank failed: " << source;
    counts[source]++;
  }
  EXPECT_EQ(0, counts[SICM_TOPOLOGY_DISCOVERED]);
  EXPECT_EQ(1, counts[SICM_TOPOLOGY_PUBLISHED]);
  EXPECT_EQ(kRanks - 1, counts[SICM_TOPOLOGY_ADOPTED]);
}

}  // namespace
