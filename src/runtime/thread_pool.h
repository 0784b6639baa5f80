// The thread pool parallel loops run on.
//
// A pool of N threads (the caller counts as one) runs a range [0, n) split
// into at most N contiguous chunks, one per thread: static scheduling suits
// the regular loop nests loom generates. Kernels pick the pool for their
// thread count when they run; generated code reaches it through
// loom_parallel_for. Idle workers spin for a short while before sleeping,
// so back-to-back parallel loops (every small kernel) do not pay a futex
// wake-up each; a long-idle pool costs nothing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace loom {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }
  // Runs fn(begin, end) over chunks covering [0, n); returns when done.
  void run(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

  // The shared pool with `threads` threads (0: one per CPU this process may use).
  static ThreadPool& with_threads(int threads);

 private:
  void worker_loop(int index);

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::mutex run_mutex_;  // one run at a time per pool
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;  // published by generation_
  int64_t n_ = 0;
  int chunks_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

// Makes `pool` the one loom_parallel_for uses on this thread while alive.
class ScopedPool {
 public:
  explicit ScopedPool(ThreadPool& pool);
  ~ScopedPool();

 private:
  ThreadPool* saved_;
};

}  // namespace loom
