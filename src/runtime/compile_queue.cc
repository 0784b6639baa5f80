#include "runtime/compile_queue.h"

#include <pthread.h>
#include <sched.h>

#include "loom/error.h"

namespace loom {

void check_cpus_usable(const std::vector<int>& cpus, const char* option) {
  cpu_set_t set;
  CPU_ZERO(&set);
  LOOM_USER_CHECK(sched_getaffinity(0, sizeof(set), &set) == 0, "cannot read this process's CPU affinity");
  for (int cpu : cpus)
    LOOM_USER_CHECK(cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set), option, ": CPU ", cpu,
                    " is not one this process may run on (see its affinity mask, e.g. taskset -p)");
}

CompileQueue::CompileQueue(int threads, std::vector<int> cpus) {
  check_cpus_usable(cpus, "compile_cpus");
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back(worker, shared_, cpus);
}

CompileQueue::~CompileQueue() {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stop = true;
    shared_->jobs.clear();
  }
  shared_->wake.notify_all();
  for (std::thread& t : threads_) {
    if (t.get_id() == std::this_thread::get_id())
      t.detach();  // destroyed from a job on this thread: it exits when the job returns
    else
      t.join();
  }
}

void CompileQueue::post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->jobs.push_back(std::move(job));
  }
  shared_->wake.notify_one();
}

void CompileQueue::wait_idle() {
  std::unique_lock<std::mutex> lock(shared_->mutex);
  shared_->idle.wait(lock, [&] { return shared_->jobs.empty() && shared_->running == 0; });
}

void CompileQueue::worker(std::shared_ptr<Shared> shared, std::vector<int> cpus) {
  if (!cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  std::unique_lock<std::mutex> lock(shared->mutex);
  while (true) {
    shared->wake.wait(lock, [&] { return shared->stop || !shared->jobs.empty(); });
    if (shared->stop) return;
    std::function<void()> job = std::move(shared->jobs.front());
    shared->jobs.pop_front();
    ++shared->running;
    lock.unlock();
    job();  // jobs catch their own errors
    job = nullptr;
    lock.lock();
    --shared->running;
    if (shared->jobs.empty() && shared->running == 0) shared->idle.notify_all();
  }
}

}  // namespace loom
