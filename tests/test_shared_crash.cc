/* SPDX-License-Identifier: BSD-3-Clause */
// test_shared_crash.cc: a shared heap after kill -9 at random points,
// including inside an update with the lock held: repaired by the next
// locker, consistent by the checker, every survivor's data intact; a
// migration lock left by a killed mover; and a creator killed before it
// finished.
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>

#include "shared_test.h"

extern "C" {
#include "shared.h"
}

namespace {

using namespace shared_test;

// One trial: three processes run traffic; one of them dies by SIGKILL, from
// outside at a random moment or from inside an update at a chosen step.
// The survivors then verify and free all their blocks, and the heap must
// pass the checker.  Returns the report.
struct TrialResult { sicm_heap_report report; int survivors_ok; long victim_live; };

TrialResult KillTrial(sicm_device *dev, unsigned trial, bool inside, std::mt19937 &rng) {
  TrialResult out{};
  std::string name = UniqueName("kill");
  sicm_arena a = sicm_arena_create_shared(name.c_str(), 8 << 20, dev, 0);
  if (a == nullptr) return out;
  auto *box = static_cast<Mailbox *>(mmap(nullptr, sizeof(Mailbox), PROT_READ | PROT_WRITE,
                                          MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  long crash_update = rng() % 3000;
  unsigned crash_step = rng() % 8;
  pid_t victim = fork();
  if (victim == 0) {
    if (inside) sc_shm_crash_at(crash_update, crash_step);
    __atomic_fetch_add(&box->ready, 1, __ATOMIC_RELEASE);
    Traffic(a, box, 100 + trial, -1, &box->victim_live);
    _exit(inside ? 70 : 0);  // an inside victim must not get here
  }
  std::vector<pid_t> survivors;
  for (unsigned id = 0; id < 2; id++) {
    pid_t c = fork();
    if (c == 0) {
      __atomic_fetch_add(&box->ready, 1, __ATOMIC_RELEASE);
      _exit(Traffic(a, box, 200 + trial * 2 + id, -1));
    }
    survivors.push_back(c);
  }
  if (victim < 0 || survivors[0] < 0 || survivors[1] < 0) {  // never kill(-1, ...)
    ADD_FAILURE() << "fork failed";
    return out;
  }
  while (__atomic_load_n(&box->ready, __ATOMIC_ACQUIRE) < 3) usleep(100);
  if (!inside) {
    usleep(rng() % 30000);
    kill(victim, SIGKILL);
  }
  int status = 0;
  waitpid(victim, &status, 0);
  bool victim_killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  __atomic_store_n(&box->stop, 1, __ATOMIC_RELEASE);
  int ok = victim_killed;
  if (!victim_killed) ADD_FAILURE() << "trial " << trial << ": victim status 0x" << std::hex << status;
  for (pid_t c : survivors) {
    int code = WaitExit(c);
    if (code != 0) ADD_FAILURE() << "trial " << trial << ": survivor exit " << code;
    ok &= code == 0;
  }
  out.survivors_ok = ok;
  for (void *&p : box->slot)
    if (p) sicm_free(p);
  out.victim_live = __atomic_load_n(&box->victim_live, __ATOMIC_ACQUIRE);
  if (sicm_arena_check(a, &out.report) != 0) {
    ADD_FAILURE() << "trial " << trial << ": " << sicm_error_detail();
    out.survivors_ok = 0;
  }
  // The repaired heap still serves every byte that is not the victim's.
  void *big = sicm_arena_alloc(a, out.report.largest_free);
  if (big == nullptr) out.survivors_ok = 0;
  sicm_free(big);
  munmap(box, sizeof(Mailbox));
  sicm_arena_detach(a);
  sicm_arena_unlink(name.c_str());
  return out;
}

TEST(SharedCrashStress, HeapSurvivesKillNineAtRandomPointsIncludingMidUpdate) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
  ASSERT_NE(nullptr, dev);
  const unsigned trials = 120;
  std::mt19937 rng(20261123);
  unsigned repaired = 0, undone = 0, inside_trials = 0;
  for (unsigned t = 0; t < trials; t++) {
    bool inside = t % 2 == 0;
    TrialResult r = KillTrial(dev, t, inside, rng);
    ASSERT_TRUE(r.survivors_ok) << "trial " << t << (inside ? " (inside)" : " (outside)");
    // Only the victim's blocks remain (give or take the one it was
    // allocating, freeing or taking from the mailbox when it died).
    EXPECT_LE((long)r.report.blocks_used, r.victim_live + 1) << "trial " << t;
    EXPECT_GE((long)r.report.blocks_used, r.victim_live - 1) << "trial " << t;
    repaired += r.report.repairs > 0;
    undone += r.report.updates_undone > 0;
    if (inside) {
      inside_trials++;
      EXPECT_EQ(1u, r.report.repairs) << "a victim inside an update held the lock";
    }
  }
  printf("kill -9: %u trials, %u died inside an update; %u heaps repaired, %u with an update "
         "undone\n", trials, inside_trials, repaired, undone);
  EXPECT_GE(repaired, inside_trials);
  EXPECT_GT(undone, inside_trials / 2);
}

// A process killed while it moves a shared arena holds the arena's
// migration lock; the next migration, from any process, must still run.
TEST(SharedCrash, MigrationByAKilledProcessDoesNotBlockTheNext) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
  ASSERT_NE(nullptr, dev);
  std::string name = UniqueName("kill-migrate");
  sicm_arena a = sicm_arena_create_shared(name.c_str(), 32 << 20, dev, 0);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  void *data = sicm_arena_alloc(a, 16 << 20);
  ASSERT_NE(nullptr, data);
  Fill(data, 16 << 20, 9);
  auto *count = static_cast<long *>(mmap(nullptr, 2 * sizeof(long), PROT_READ | PROT_WRITE,
                                         MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(MAP_FAILED, count);
  std::mt19937 rng(7);
  const unsigned trials = 20;
  unsigned killed_inside = 0;
  for (unsigned t = 0; t < trials; t++) {
    count[0] = count[1] = 0;  // migrations begun, ended
    pid_t mover = fork();
    if (mover == 0) {
      for (;;) {
        __atomic_fetch_add(&count[0], 1, __ATOMIC_SEQ_CST);
        if (sicm_arena_set_device(a, dev) != 0) _exit(1);
        __atomic_fetch_add(&count[1], 1, __ATOMIC_SEQ_CST);
      }
    }
    ASSERT_GT(mover, 0);
    int status = 0;
    while (__atomic_load_n(&count[1], __ATOMIC_SEQ_CST) < 1 && waitpid(mover, &status, WNOHANG) == 0)
      usleep(100);
    ASSERT_EQ(0, status) << "trial " << t << ": the mover failed before its first migration";
    usleep(rng() % 5000);
    kill(mover, SIGKILL);
    ASSERT_EQ(128 + SIGKILL, WaitExit(mover)) << "trial " << t;
    killed_inside += count[0] != count[1];
    ASSERT_EQ(0, sicm_arena_set_device(a, dev)) << "trial " << t << ": " << sicm_error_detail();
  }
  printf("%u of %u movers killed inside a migration\n", killed_inside, trials);
  EXPECT_GT(killed_inside, 0u) << "no kill landed inside a migration: the test proved nothing";
  EXPECT_TRUE(Verify(data, 16 << 20, 9));
  EXPECT_EQ(0, sicm_arena_check(a, nullptr)) << sicm_error_detail();
  munmap(count, 2 * sizeof(long));
  EXPECT_EQ(0, sicm_arena_detach(a));
  EXPECT_EQ(0, sicm_arena_unlink(name.c_str()));
}

// A creator killed at each step of creating leaves an object nobody can
// attach; attach says so without waiting out the creator, and a create of
// the name (or sicm_arena_unlink) reclaims it — no hand cleanup.
TEST(SharedCrash, CreatorKilledMidCreationLeavesANameThatCreateReclaims) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
  ASSERT_NE(nullptr, dev);
  for (int step = 0; step < 4; step++)
    for (bool by_unlink : {false, true}) {
      std::string name = UniqueName("half");
      pid_t creator = fork();
      if (creator == 0) {
        sc_shm_crash_in_create(step);
        sicm_arena_create_shared(name.c_str(), 1 << 20, dev, 0);
        _exit(1);
      }
      ASSERT_GT(creator, 0);
      ASSERT_EQ(128 + SIGKILL, WaitExit(creator)) << "step " << step;
      errno = 0;
      EXPECT_EQ(nullptr, sicm_arena_attach(name.c_str())) << "step " << step;
      EXPECT_EQ(ENOENT, errno) << "step " << step << ": " << sicm_error_detail();
      if (by_unlink) {
        EXPECT_EQ(0, sicm_arena_unlink(name.c_str())) << sicm_error_detail();
      }
      sicm_arena a = sicm_arena_create_shared(name.c_str(), 1 << 20, dev, 0);
      ASSERT_NE(nullptr, a) << "step " << step << ": " << sicm_error_detail();
      void *p = sicm_arena_alloc(a, 100);
      EXPECT_NE(nullptr, p);
      sicm_free(p);
      EXPECT_EQ(0, sicm_arena_check(a, nullptr)) << sicm_error_detail();
      EXPECT_EQ(0, sicm_arena_detach(a));
      EXPECT_EQ(0, sicm_arena_unlink(name.c_str()));
    }
}

// Several processes create one name at once, with random pauses where a
// creation can race another creator's reclaim of the name (before the
// creation lock, before binding, inside a reclaim): exactly one creates it,
// and every process, creator or attacher, sees that one heap (its header
// names the same creator).
TEST(SharedCrashStress, OneCreatorPerNameUnderInjectedDelays) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
  ASSERT_NE(nullptr, dev);
  constexpr int kProcesses = 4, kTrials = 1000;
  struct Report { int created; int32_t creator; };
  auto *reports = static_cast<Report *>(mmap(nullptr, sizeof(Report) * kProcesses,
                                             PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(MAP_FAILED, (void *)reports);
  int failures = 0;
  for (int trial = 0; trial < kTrials && failures < 5; trial++) {
    std::string name = UniqueName("race");
    memset(reports, 0, sizeof(Report) * kProcesses);
    int go[2];
    ASSERT_EQ(0, pipe(go));
    std::vector<pid_t> pids;
    for (int i = 0; i < kProcesses; i++) {
      pid_t pid = fork();
      if (pid == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 0) _exit(90);
        sc_shm_delay_in_create(trial % 2 ? 3000 : 300);
        sicm_arena a = sicm_arena_create_shared(name.c_str(), 1 << 20, dev, 0);
        reports[i].created = a != nullptr;
        if (a == nullptr && errno != EEXIST) _exit(91);
        for (int tries = 0; a == nullptr && tries < 500; tries++) {
          a = sicm_arena_attach(name.c_str());
          if (a == nullptr) usleep(1000);
        }
        if (a == nullptr) _exit(92);
        void *p = sicm_arena_alloc(a, 64);
        if (p == nullptr) _exit(93);
        auto *h = (sc_shm_header *)((uintptr_t)p & ~(uintptr_t)(SC_CHUNK_SIZE - 1));
        reports[i].creator = h->creator_pid;
        _exit(0);
      }
      pids.push_back(pid);
    }
    close(go[0]);
    close(go[1]);
    int creators = 0, creator_pid = 0;
    std::string why;
    for (int i = 0; i < kProcesses; i++) {
      int code = WaitExit(pids[i]);
      if (code != 0) why += " process " + std::to_string(i) + " exited " + std::to_string(code) + ";";
      if (reports[i].created) creators++, creator_pid = pids[i];
    }
    for (int i = 0; i < kProcesses; i++)
      if (reports[i].creator != creator_pid)
        why += " process " + std::to_string(i) + " sees the heap of " + std::to_string(reports[i].creator) + ";";
    if (creators != 1) why += " " + std::to_string(creators) + " creators;";
    EXPECT_EQ("", why) << "trial " << trial;
    failures += !why.empty();
    sicm_arena_unlink(name.c_str());
  }
  munmap(reports, sizeof(Report) * kProcesses);
}

}  // namespace
