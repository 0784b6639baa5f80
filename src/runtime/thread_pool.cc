#include "runtime/thread_pool.h"

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <pthread.h>
#include <sched.h>

#include "loom/compile.h"
#include "loom/error.h"
#include "runtime/runtime_abi.h"

namespace loom {

namespace {
thread_local ThreadPool* current_pool = nullptr;

// Spins until `ready()` or about `budget_us` have passed; true when ready.
template <typename Ready>
bool spin_until(Ready ready, int budget_us) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (ready()) return true;
    __builtin_ia32_pause();
    if ((i & 255) == 255 &&
        std::chrono::steady_clock::now() - start > std::chrono::microseconds(budget_us))
      return ready();
  }
}

constexpr int kSpinMicros = 200;

std::pair<int64_t, int64_t> chunk_range(int64_t n, int chunks, int index) {
  int64_t base = n / chunks, extra = n % chunks;
  int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}
}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  while (true) {
    auto has_work = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(has_work, kSpinMicros)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, has_work);
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    if (index < chunks_) {
      auto [b, e] = chunk_range(n_, chunks_, index);
      (*job_)(b, e);
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::run(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int chunks = int(std::min<int64_t>(n, threads_));
  if (chunks == 1) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> serial(run_mutex_);
  job_ = &fn;
  n_ = n;
  chunks_ = chunks;
  pending_.store(threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);  // publishes the job
  {
    std::lock_guard<std::mutex> lock(mutex_);  // no sleeper misses the new generation
  }
  wake_.notify_all();
  auto [b, e] = chunk_range(n, chunks, 0);
  fn(b, e);
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done, kSpinMicros)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, done);
  }
}

namespace {

// The shared pools. A child process forked from a process with pools (a
// measurement worker) has none of their threads: it starts a fresh registry
// and leaks the inherited one, whose workers exist only in the parent.
struct PoolRegistry {
  std::mutex mutex;
  std::map<int, std::unique_ptr<ThreadPool>> pools;
};
PoolRegistry* registry = nullptr;

void lock_registry() { registry->mutex.lock(); }
void unlock_registry() { registry->mutex.unlock(); }
void reset_registry_in_child() { registry = new PoolRegistry; }

PoolRegistry& pool_registry() {
  static std::once_flag once;
  std::call_once(once, [] {
    registry = new PoolRegistry;
    pthread_atfork(lock_registry, unlock_registry, reset_registry_in_child);
  });
  return *registry;
}

}  // namespace

ThreadPool& ThreadPool::with_threads(int threads) {
  if (threads <= 0) threads = usable_cpus();
  LOOM_INTERNAL_CHECK(threads <= kMaxThreads, "a pool of ", threads, " threads was asked for");
  PoolRegistry& r = pool_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto& pool = r.pools[threads];
  if (!pool) pool = std::make_unique<ThreadPool>(threads);
  return *pool;
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, CPU_COUNT(&set));
}

ScopedPool::ScopedPool(ThreadPool& pool) : saved_(current_pool) { current_pool = &pool; }
ScopedPool::~ScopedPool() { current_pool = saved_; }

}  // namespace loom

extern "C" void loom_parallel_for(void (*task)(void*, int64_t, int64_t), void* closure, int64_t n) {
  if (!loom::current_pool) {
    task(closure, 0, n);
    return;
  }
  loom::current_pool->run(n, [&](int64_t b, int64_t e) { task(closure, b, e); });
}
