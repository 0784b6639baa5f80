// The dynamic-shape runtime: results against the reference for every way a
// call can be served, the swap to specialized kernels, concurrent dispatch
// while compiles run, eviction, the disk cache across runtimes, corrupt
// entries, affinity-sized pools, and bad input.
#include <sched.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "runtime/kernel_cache.h"
#include "runtime/thread_pool.h"
#include "test_util.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

// A fresh cache directory per test, removed afterwards.
class DynamicTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom-dynamic-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  RuntimeOptions runtime_options() const {
    RuntimeOptions o;
    o.cache_dir = dir_.string();
    return o;
  }
  fs::path dir_;
};

JitOptions one_thread() {
  JitOptions o;
  o.compile.threads = 1;
  return o;
}

struct Call {
  std::vector<Buffer> inputs, outputs;
};

Call make_call(const Operator& op, int64_t m, uint64_t seed) {
  Call c;
  c.inputs = random_inputs(op, seed, {m});
  for (const auto& s : output_shapes(op, c.inputs)) c.outputs.push_back(Buffer::allocate(s));
  return c;
}

// Runs the call and checks every output element against the reference.
ServedBy run_checked(const JitKernel& k, const Operator& op, int64_t m, uint64_t seed = 3) {
  Call c = make_call(op, m, seed);
  ServedBy served = k.run(c.inputs, c.outputs);
  CheckOptions co;
  co.max_points = 1 << 20;
  CheckResult r = check_against_reference(op, c.inputs, c.outputs, co);
  EXPECT_TRUE(r.ok) << op.name << " M=" << m << " served by " << to_string(served) << ": max_rel_err "
                    << r.max_rel_err;
  return served;
}

TEST_F(DynamicTest, EveryServedKernelMatchesTheReferenceAtAwkwardSizes) {
  Runtime runtime(runtime_options());
  for (const char* name : {"dense", "softmax", "layernorm"}) {
    std::map<std::string, std::string> params = {{"N", "37"}};
    if (std::string(name) == "dense") params = {{"N", "29"}, {"K", "19"}, {"epilogue", "bias_gelu"}};
    Operator op = make_operator(name, params, {"M"});
    JitKernel k = runtime.jit(op, one_thread());
    const std::vector<int64_t> sizes = {1, 7, 37, 64, 129, 7, 1};
    for (int64_t m : sizes) run_checked(k, op, m);
    k.wait_idle();
    for (int64_t m : sizes) EXPECT_EQ(run_checked(k, op, m), ServedBy::Specialized) << name << " M=" << m;
    EXPECT_EQ(k.stats().compiles_on_critical_path, 1) << name;  // the first generic kernel only
    EXPECT_EQ(k.stats().failed, 0) << name;
  }
}

TEST_F(DynamicTest, FirstCallIsGenericThenTheSpecializedKernelIsSwappedIn) {
  Runtime runtime(runtime_options());
  Operator op = make_operator("matmul", {{"N", "33"}, {"K", "21"}}, {"M"});
  JitKernel k = runtime.jit(op, one_thread());
  EXPECT_EQ(run_checked(k, op, 45), ServedBy::Generic);
  k.wait_idle();
  EXPECT_EQ(run_checked(k, op, 45), ServedBy::Specialized);
  EXPECT_NE(k.schedule_for({45}), "");
  EXPECT_EQ(k.schedule_for({46}), "");
  // A new shape in another bucket is served at once by the existing generic
  // kernel, never by a compile on the caller's thread.
  EXPECT_EQ(run_checked(k, op, 300), ServedBy::Generic);
  k.wait_idle();
  JitStats s = k.stats();
  EXPECT_EQ(s.compiles_on_critical_path, 1);
  EXPECT_GE(s.background_compiles, 3);  // specializations of 45 and 300, the generic kernel of 300's bucket
  EXPECT_EQ(s.specialized_ready, 2);
  EXPECT_EQ(s.calls, 3);
}

TEST_F(DynamicTest, SpecializeAfterWaitsForThatManyCalls) {
  Runtime runtime(runtime_options());
  Operator op = make_operator("softmax", {{"N", "19"}}, {"M"});
  JitOptions o = one_thread();
  o.specialize_after = 3;
  JitKernel k = runtime.jit(op, o);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(run_checked(k, op, 10), ServedBy::Generic);
  k.wait_idle();
  EXPECT_EQ(run_checked(k, op, 10), ServedBy::Generic);  // the third call queues it
  k.wait_idle();
  EXPECT_EQ(run_checked(k, op, 10), ServedBy::Specialized);
}

TEST_F(DynamicTest, LeastRecentlyUsedSpecializationsAreEvicted) {
  Runtime runtime(runtime_options());
  Operator op = make_operator("gelu", {{"N", "13"}}, {"M"});
  JitOptions o = one_thread();
  o.max_specialized = 2;
  JitKernel k = runtime.jit(op, o);
  for (int64_t m : {3, 5, 9, 17}) {
    run_checked(k, op, m);
    k.wait_idle();
  }
  JitStats s = k.stats();
  EXPECT_EQ(s.specialized_ready, 2);
  EXPECT_EQ(s.evictions, 2);
  EXPECT_EQ(run_checked(k, op, 17), ServedBy::Specialized);
  EXPECT_EQ(run_checked(k, op, 3), ServedBy::Generic);  // evicted: generic again, and queued again
}

TEST_F(DynamicTest, ManyThreadsCallWhileCompilesRun) {
  RuntimeOptions ro = runtime_options();
  ro.compile_threads = 2;
  Runtime runtime(ro);
  Operator op = make_operator("dense", {{"N", "24"}, {"K", "13"}, {"epilogue", "bias"}}, {"M"});
  JitKernel k = runtime.jit(op, one_thread());
  const std::vector<int64_t> sizes = {1, 2, 5, 8, 13, 31, 32, 33, 70, 129};
  // Expected outputs from the reference, computed once per size.
  std::map<int64_t, std::vector<float>> want;
  for (int64_t m : sizes) {
    Call c = make_call(op, m, uint64_t(m));
    std::vector<Buffer> ref = evaluate_reference(op, c.inputs);
    want[m].assign(ref[0].as<float>(), ref[0].as<float>() + ref[0].numel());
  }
  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng{unsigned(t)};
      for (int i = 0; i < 60; ++i) {
        const int64_t m = sizes[rng() % sizes.size()];
        Call c = make_call(op, m, uint64_t(m));
        try {
          k.run(c.inputs, c.outputs);
        } catch (const std::exception&) {
          ++errors;
          continue;
        }
        const float* got = c.outputs[0].as<float>();
        for (size_t j = 0; j < want[m].size(); ++j)
          if (std::abs(got[j] - want[m][j]) > 1e-3f * std::max(1.0f, std::abs(want[m][j]))) {
            ++wrong;
            break;
          }
      }
    });
  for (auto& th : threads) th.join();
  k.wait_idle();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  JitStats s = k.stats();
  EXPECT_EQ(s.calls, 240);
  EXPECT_EQ(s.compiles_on_critical_path, 1);
  EXPECT_EQ(s.specialized_ready, int(sizes.size()));
}

TEST_F(DynamicTest, ASecondRuntimeLoadsEveryKernelFromDiskWithoutLlvm) {
  Operator op = make_operator("layernorm", {{"N", "45"}}, {"M"});
  {
    Runtime first(runtime_options());
    JitKernel k = first.jit(op, one_thread());
    for (int64_t m : {6, 100}) run_checked(k, op, m);
    k.wait_idle();
    EXPECT_GT(k.stats().llvm_compiles, 0);
  }
  Runtime second(runtime_options());
  JitKernel k = second.jit(op, one_thread());
  EXPECT_EQ(run_checked(k, op, 6), ServedBy::Disk);
  EXPECT_EQ(run_checked(k, op, 100), ServedBy::Disk);
  EXPECT_EQ(run_checked(k, op, 6), ServedBy::Disk);
  k.wait_idle();
  JitStats s = k.stats();
  EXPECT_EQ(s.llvm_compiles, 0);
  EXPECT_EQ(s.compiles_on_critical_path, 0);
  EXPECT_TRUE(s.warnings.empty());
}

TEST_F(DynamicTest, CorruptCacheEntriesAreReportedAndRebuilt) {
  Operator op = make_operator("matmul", {{"N", "10"}, {"K", "7"}}, {"M"});
  {
    Runtime first(runtime_options());
    JitKernel k = first.jit(op, one_thread());
    run_checked(k, op, 12);
    k.wait_idle();
  }
  int damaged = 0;
  for (const auto& entry : fs::directory_iterator(dir_ / "kernels")) {
    const auto size = fs::file_size(entry.path());
    if (damaged % 2 == 0) {
      fs::resize_file(entry.path(), size / 2);  // truncated
    } else {
      std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(std::streamoff(size / 2));
      f.write("\xff\xfe\xfd", 3);  // flipped bytes
    }
    ++damaged;
  }
  ASSERT_GE(damaged, 2);
  {
    Runtime second(runtime_options());
    JitKernel k = second.jit(op, one_thread());
    run_checked(k, op, 12);
    k.wait_idle();
    EXPECT_EQ(run_checked(k, op, 12), ServedBy::Specialized);
    JitStats s = k.stats();
    EXPECT_GT(s.llvm_compiles, 0);
    ASSERT_FALSE(s.warnings.empty());
    EXPECT_NE(s.warnings.front().find("truncated or corrupt"), std::string::npos) << s.warnings.front();
  }
  Runtime third(runtime_options());
  JitKernel k = third.jit(op, one_thread());
  EXPECT_EQ(run_checked(k, op, 12), ServedBy::Disk);
  EXPECT_TRUE(k.stats().warnings.empty());
}

TEST_F(DynamicTest, WithoutBackgroundCompilesEveryMissCompilesOnTheCallersThread) {
  Runtime runtime(runtime_options());
  Operator op = make_operator("reduce", {{"N", "21"}, {"kind", "max"}}, {"M"});
  JitOptions o = one_thread();
  o.background = false;
  JitKernel k = runtime.jit(op, o);
  EXPECT_EQ(run_checked(k, op, 4), ServedBy::Specialized);
  EXPECT_EQ(run_checked(k, op, 9), ServedBy::Specialized);
  EXPECT_EQ(k.stats().compiles_on_critical_path, 2);
  EXPECT_EQ(k.stats().background_compiles, 0);
}

TEST_F(DynamicTest, KernelsOutliveTheirRuntime) {
  Operator op = make_operator("bias_add_relu", {{"N", "8"}}, {"M"});
  JitKernel k;
  {
    Runtime runtime(runtime_options());
    k = runtime.jit(op, one_thread());
    run_checked(k, op, 5);
  }
  k.wait_idle();  // queued work was dropped with the runtime: nothing to wait for
  run_checked(k, op, 5);
  run_checked(k, op, 77);
}

TEST_F(DynamicTest, BadInputIsAUserErrorNamingIt) {
  Runtime runtime(runtime_options());
  Operator op = make_operator("matmul", {{"N", "8"}, {"K", "4"}}, {"M"});
  JitKernel k = runtime.jit(op, one_thread());
  Call c = make_call(op, 6, 1);
  k.run(c.inputs, c.outputs);
  std::vector<Buffer> wrong_k = {Buffer::allocate({6, 5}), c.inputs[1]};
  EXPECT_USER_ERROR(k.run(wrong_k, c.outputs), "input #0");
  std::vector<Buffer> small_out = {Buffer::allocate({5, 8})};
  EXPECT_USER_ERROR(k.run(c.inputs, small_out), "output #0");
  EXPECT_USER_ERROR(k.run({c.inputs[0]}, c.outputs), "takes 2 inputs");
  EXPECT_USER_ERROR(k.run(c.inputs, {c.inputs[0]}), "output #0");
  JitOptions top = one_thread();
  top.compile.top_k = 3;
  EXPECT_USER_ERROR(runtime.jit(op, top), "top_k=3");
  JitOptions after = one_thread();
  after.specialize_after = 0;
  EXPECT_USER_ERROR(runtime.jit(op, after), "specialize_after=0");
  RuntimeOptions ro = runtime_options();
  ro.compile_cpus = {100000};
  EXPECT_USER_ERROR(Runtime{ro}, "CPU 100000");
  ro.compile_cpus = {};
  ro.compile_threads = 0;
  EXPECT_USER_ERROR(Runtime{ro}, "compile_threads=0");
  EXPECT_USER_ERROR(JitKernel().run({}, {}), "never created");
}

TEST(CompileCache, AnIdenticalRequestReturnsTheSameKernel) {
  Operator a = ops::matmul(17, 9, 5);
  Operator b = ops::matmul(17, 9, 5);  // built again: equal structure
  CompileOptions o;
  o.threads = 1;
  Kernel k1 = compile(a, o);
  Kernel k2 = compile(b, o);
  EXPECT_EQ(&k1.report(), &k2.report());
  o.seed = 2;
  Kernel k3 = compile(a, o);
  EXPECT_NE(&k1.report(), &k3.report());
  EXPECT_NE(&k1.report(), &compile(ops::matmul(17, 9, 6), CompileOptions{.threads = 1}).report());
}

TEST(ThreadPool, SizedFromTheAffinityMask) {
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &saved)) {
      CPU_SET(cpu, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const int under_one = usable_cpus();
  const int pool = ThreadPool::with_threads(0).size();
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(under_one, 1);
  EXPECT_EQ(pool, 1);
  EXPECT_EQ(usable_cpus(), CPU_COUNT(&saved));
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST(KernelCacheBound, LeastRecentlyUsedEntriesGoBeyondTheLimit) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("loom-cache-bound-" + std::to_string(getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  KernelCache cache(dir, 10000);
  const std::string value(3000, 'x');
  std::string warning;
  ASSERT_EQ(cache.store("a", value), "");
  ASSERT_EQ(cache.store("b", value), "");
  ASSERT_EQ(cache.store("c", value), "");
  // Age the entries (file times are coarse: set them), then use "a".
  std::filesystem::last_write_time(cache.path_for("a"), std::filesystem::file_time_type::clock::now() -
                                                            std::chrono::hours(2));
  std::filesystem::last_write_time(cache.path_for("b"), std::filesystem::file_time_type::clock::now() -
                                                            std::chrono::hours(1));
  std::filesystem::last_write_time(cache.path_for("c"), std::filesystem::file_time_type::clock::now() -
                                                            std::chrono::minutes(30));
  ASSERT_TRUE(cache.load("a", warning).has_value());  // refreshed: now the most recently used
  ASSERT_EQ(cache.store("d", value), "");  // 4 x ~3 KB > 10 KB: trimmed to 7.5 KB, b and c go
  EXPECT_TRUE(cache.load("a", warning).has_value());
  EXPECT_FALSE(cache.load("b", warning).has_value());
  EXPECT_FALSE(cache.load("c", warning).has_value());
  EXPECT_TRUE(cache.load("d", warning).has_value());
  EXPECT_TRUE(warning.empty()) << warning;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loom
