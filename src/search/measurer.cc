#include "search/measurer.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>

#include "codegen/backend.h"
#include "ir/size_binding.h"
#include "loom/error.h"
#include "loom/memory.h"
#include "loom/reference.h"
#include "loom/timing.h"
#include "lower/lower.h"
#include "runtime/thread_pool.h"

namespace loom {

namespace {

using Emit = std::function<void(const std::string&)>;

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s.size() > 1000 ? s.substr(0, 1000) + "..." : s;
}

uint64_t candidate_key(const Candidate& c) {
  return c.state ? uint64_t(c.state->hash()) : uint64_t(std::hash<std::string>()(c.schedule.str()));
}

// What a worker needs; everything is set up before it starts (before fork).
struct WorkerJob {
  const Task* task;
  const std::vector<Candidate>* batch;
  std::vector<int> todo;
  const MeasureOptions* options;
  const std::vector<Buffer>* inputs;
  const std::vector<std::vector<int64_t>>* output_shapes;
  bool inject_faults;
};

[[noreturn]] void hang_forever() {
  for (;;) pause();
}

// Compiles, checks and times job.todo, reporting each step through `emit`:
//   S i                      candidate i: compile + check starts
//   C i ok <err> <first_ms>  compiled, first run correct
//   C i <error> <message>    compile | runtime | wrong
//   T i                      candidate i: a timing pass starts
//   R i <ms>...              its samples
//   D                        all done
void run_worker(const WorkerJob& job, const Emit& emit) {
  const Task& task = *job.task;
  const MeasureOptions& opt = *job.options;
  std::vector<Buffer> outputs;
  for (const auto& shape : *job.output_shapes) outputs.push_back(Buffer::allocate(shape));
  std::vector<void*> args;
  for (const Buffer& b : *job.inputs) args.push_back(b.data());
  for (const Buffer& b : outputs) args.push_back(b.data());
  std::unique_ptr<codegen::Backend> backend = codegen::make_backend(task.target);
  ThreadPool& pool = ThreadPool::with_threads(task.threads);

  std::vector<std::unique_ptr<codegen::CompiledFunction>> fns(job.batch->size());
  std::vector<double> first_ms(job.batch->size(), 0);
  std::vector<int> ok;
  for (int i : job.todo) {
    const Candidate& c = (*job.batch)[size_t(i)];
    emit("S " + std::to_string(i));
    const Fault fault = job.inject_faults ? opt.faults.decide(candidate_key(c)) : Fault::None;
    if (fault == Fault::Crash) {
      signal(SIGSEGV, SIG_DFL);
      raise(SIGSEGV);
    }
    if (fault == Fault::Hang) hang_forever();
    try {
      fns[size_t(i)] = backend->compile(lower(task.op, c.schedule));
    } catch (const std::exception& e) {
      emit("C " + std::to_string(i) + " compile " + one_line(e.what()));
      continue;
    }
    try {
      for (Buffer& b : outputs) std::fill_n(static_cast<float*>(b.data()), b.numel(), NAN);
      ScopedPool scoped(pool);
      auto t0 = std::chrono::steady_clock::now();
      fns[size_t(i)]->call(args.data(), task.plan_sizes.data());
      first_ms[size_t(i)] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (fault == Fault::Wrong)
        for (Buffer& b : outputs)
          for (float* p = static_cast<float*>(b.data()), *e = p + b.numel(); p < e; ++p) *p = *p * 1.5f + 1.f;
      CheckOptions co;
      co.max_points = opt.check_points;
      CheckResult check = check_against_reference(task.op, *job.inputs, outputs, co);
      std::ostringstream msg;
      msg.precision(3);
      if (!check.ok) {
        msg << "C " << i << " wrong max_rel_err " << check.max_rel_err << " over " << check.points_checked
            << " points";
        emit(msg.str());
        continue;
      }
      msg << "C " << i << " ok " << check.max_rel_err << " " << first_ms[size_t(i)];
      emit(msg.str());
      ok.push_back(i);
    } catch (const std::exception& e) {
      emit("C " + std::to_string(i) + " runtime " + one_line(e.what()));
    }
  }

  double best_first = 0;
  for (int i : ok) best_first = best_first == 0 ? first_ms[size_t(i)] : std::min(best_first, first_ms[size_t(i)]);
  std::vector<int> timed;
  for (int i : ok) {
    if (first_ms[size_t(i)] <= opt.prune_ratio * best_first) timed.push_back(i);
    else emit("R " + std::to_string(i) + " " + std::to_string(first_ms[size_t(i)]));
  }
  for (int pass = 0; pass < opt.passes && !timed.empty(); ++pass) {
    for (size_t k = 0; k < timed.size(); ++k) {
      const int i = timed[(k + size_t(pass)) % timed.size()];
      emit("T " + std::to_string(i));
      TimingOptions t;
      t.warmup = pass == 0 ? 1 : 0;
      t.repeats = opt.repeats;
      t.min_total_ms = opt.min_pass_ms;
      t.max_repeats = opt.max_repeats;
      t.flush_cache = opt.flush_cache;
      ScopedPool scoped(pool);
      const codegen::CompiledFunction& fn = *fns[size_t(i)];
      TimingResult r = time_function([&] { fn.call(args.data(), task.plan_sizes.data()); }, t);
      std::ostringstream msg;
      msg.precision(6);
      msg << "R " << i;
      for (double s : r.samples_ms) msg << " " << s;
      emit(msg.str());
    }
  }
  emit("D");
}

// Folds worker messages into results. Returns false on "D" never seen.
class Collector {
 public:
  explicit Collector(size_t n) : results(n) {}

  void on_line(const std::string& line) {
    std::istringstream in(line);
    std::string tag;
    int i = -1;
    in >> tag >> i;
    if (tag == "D") {
      finished = true;
      return;
    }
    LOOM_INTERNAL_CHECK(i >= 0 && size_t(i) < results.size(), "measurement worker sent '", line, "'");
    MeasureResult& r = results[size_t(i)];
    if (tag == "S" || tag == "T") {
      in_flight = i;
      return;
    }
    in_flight = -1;
    if (tag == "R") {
      for (double ms; in >> ms;) r.samples_ms.push_back(ms);
      return;
    }
    std::string kind;
    in >> kind;
    if (kind == "ok") {
      in >> r.max_rel_err;
      return;
    }
    std::string rest;
    std::getline(in, rest);
    r.error = kind == "compile" ? MeasureError::Compile : kind == "wrong" ? MeasureError::Wrong : MeasureError::Runtime;
    r.message = kind + " error:" + rest;
    failed.insert(i);
  }

  std::vector<MeasureResult> results;
  std::set<int> failed;
  int in_flight = -1;
  bool finished = false;
};

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return std::string("worker killed by signal ") + strsignal(WTERMSIG(status));
  if (WIFEXITED(status)) return "worker exited with status " + std::to_string(WEXITSTATUS(status));
  return "worker stopped";
}

// Runs one worker process over job.todo; folds its messages into `c`.
// Returns the failure of the candidate in flight when the worker died or
// hung (or of every candidate left, when none was in flight).
void run_isolated(const WorkerJob& job, Collector& c) {
  int fds[2];
  LOOM_INTERNAL_CHECK(pipe(fds) == 0, "pipe: ", std::strerror(errno));
  pid_t pid = fork();
  LOOM_INTERNAL_CHECK(pid >= 0, "fork: ", std::strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    signal(SIGPIPE, SIG_IGN);
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    const int fd = fds[1];
    auto emit = [fd](const std::string& s) {
      std::string line = s + "\n";
      for (size_t off = 0; off < line.size();) {
        ssize_t w = write(fd, line.data() + off, line.size() - off);
        if (w <= 0) _exit(3);
        off += size_t(w);
      }
    };
    try {
      run_worker(job, emit);
    } catch (const std::exception& e) {
      emit("X " + one_line(e.what()));
    }
    _exit(0);
  }
  close(fds[1]);
  std::string pending;
  const int timeout_ms = int(std::min(3.6e6, job.options->timeout_s * 1000));
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    int ready = poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      timed_out = true;
      break;
    }
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, size_t(n));
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
      std::string line = pending.substr(0, nl);
      if (line.rfind("X ", 0) == 0) throw InternalError("measurement worker: " + line.substr(2));
      c.on_line(line);
    }
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (c.finished) return;
  const MeasureError kind = timed_out ? MeasureError::Timeout : MeasureError::Crash;
  std::ostringstream why;
  if (timed_out) why << "no progress within " << job.options->timeout_s << " s; worker killed";
  else why << describe_status(status);
  auto fail = [&](int i) {
    c.results[size_t(i)].error = kind;
    c.results[size_t(i)].message = why.str();
    c.failed.insert(i);
  };
  if (c.in_flight >= 0) fail(c.in_flight);
  else
    for (int i : job.todo)
      if (!c.failed.count(i)) fail(i);
}

}  // namespace

Measurer::Measurer(const Task& task, MeasureOptions options) : task_(task), options_(std::move(options)) {
  check_run_memory(task.op, task.plan_sizes);
  inputs_ = random_inputs(task.op, /*seed=*/3, task.plan_sizes);
  SizeBinding binding = bind_sizes(task.op, task.plan_sizes);
  for (const auto& t : task.op.outputs) output_shapes_.push_back(eval_shape(t.shape(), binding));
}

std::vector<MeasureResult> Measurer::measure(const std::vector<Candidate>& batch) {
  Collector c(batch.size());
  WorkerJob job{&task_, &batch, {}, &options_, &inputs_, &output_shapes_, options_.isolate && options_.faults.any()};
  for (int i = 0; i < int(batch.size()); ++i) job.todo.push_back(i);
  if (!options_.isolate) {
    run_worker(job, [&](const std::string& line) { c.on_line(line); });
  } else {
    // A worker that dies or hangs takes one candidate with it; the rest are
    // measured again, from their compile, in a fresh worker.
    while (!job.todo.empty()) {
      run_isolated(job, c);
      if (c.finished) break;
      std::vector<int> left;
      for (int i : job.todo)
        if (!c.failed.count(i)) {
          left.push_back(i);
          c.results[size_t(i)].samples_ms.clear();
        }
      job.todo = left;
      c.in_flight = -1;
    }
  }
  for (MeasureResult& r : c.results) {
    if (!r.ok()) continue;
    if (r.samples_ms.empty()) {
      r.error = MeasureError::Runtime;
      r.message = "no timing samples";
      continue;
    }
    std::vector<double> s = r.samples_ms;
    std::sort(s.begin(), s.end());
    r.time_ms = s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  }
  return c.results;
}

}  // namespace loom
