// Background compile threads for the dynamic-shape runtime.
//
// Jobs run in the order posted on a fixed set of threads, optionally pinned
// to given CPUs so that compiles never take the cores the caller's kernels
// run on. Destroying the queue drops the jobs not yet started and waits for
// the running ones.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <memory>
#include <thread>
#include <vector>

namespace loom {

class CompileQueue {
 public:
  // `cpus`: the CPUs compile threads may run on; empty: the process's mask.
  CompileQueue(int threads, std::vector<int> cpus);
  ~CompileQueue();
  CompileQueue(const CompileQueue&) = delete;
  CompileQueue& operator=(const CompileQueue&) = delete;

  void post(std::function<void()> job);
  // Blocks until every job posted so far has finished.
  void wait_idle();

 private:
  // What the threads share, kept alive by each thread: a job may drop the
  // last reference to the queue's owner, destroying the queue on one of its
  // own threads, which then exits without touching the queue object.
  struct Shared {
    std::mutex mutex;
    std::condition_variable wake, idle;
    std::deque<std::function<void()>> jobs;
    int running = 0;
    bool stop = false;
  };
  static void worker(std::shared_ptr<Shared> shared, std::vector<int> cpus);

  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::vector<std::thread> threads_;
};

// UserError unless every CPU in `cpus` is one this process may run on.
void check_cpus_usable(const std::vector<int>& cpus, const char* option);

}  // namespace loom
