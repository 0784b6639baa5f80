#include "bench_util.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace bench {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

// Untimed calls of `fn` until its data has won back the caches another
// callable's data filled: at least `calls` of them and kWarmMs, and on
// until two calls in a row run no faster than the one before, up to
// kWarmCapMs. After another 16 MB matrix, a GEMV's 16 MB B took 4 calls
// (2.1 ms) to be read from a 32 MB shared L3 again: 0.85, 0.58, 0.41, 0.28
// ms, then 0.25 (Zen 4). After a 64 MB buffer, a GEMV's 64 MB B ran 3.2 ms
// timed after 3 ms of such calls, 2.3 after 20 ms or after itself (Xeon).
constexpr double kWarmMs = 3, kWarmCapMs = 60;
void warm(const std::function<void()>& fn, int calls) {
  const double start = now_ms();
  double last = INFINITY;
  int settled = 0;  // calls in a row no faster than the one before
  for (int c = 1;; ++c) {
    const double t0 = now_ms();
    fn();
    const double t = now_ms() - t0, spent = now_ms() - start;
    settled = t > 0.98 * last ? settled + 1 : 0;
    last = t;
    if ((c >= calls && spent >= kWarmMs && settled >= 2) || spent >= kWarmCapMs) return;
  }
}

}  // namespace

std::vector<double> time_interleaved(const std::vector<std::function<void()>>& fns, double budget_ms, bool blocks) {
  if (blocks) {
    std::vector<double> med;
    for (const auto& fn : fns) {
      std::vector<double> one = time_interleaved({fn}, budget_ms / double(fns.size()), false);
      med.push_back(one[0]);
    }
    return med;
  }
  std::vector<int> reps(fns.size(), 1);
  for (size_t i = 0; i < fns.size(); ++i) {  // warm up and calibrate to >= 1 ms per sample
    warm(fns[i], 1);
    double t0 = now_ms();
    fns[i]();
    double dt = std::max(now_ms() - t0, 1e-4);
    reps[i] = std::max(1, int(1.0 / dt));
  }
  std::vector<std::vector<double>> samples(fns.size());
  double start = now_ms();
  for (int round = 0; round < 300 && (round < 7 || now_ms() - start < budget_ms); ++round)
    for (size_t j = 0; j < fns.size(); ++j) {
      const size_t i = (j + size_t(round)) % fns.size();  // each takes each place in turn: none always follows the same
      warm(fns[i], reps[i]);  // untimed: brings its data back into the caches the others used
      double t0 = now_ms();
      for (int r = 0; r < reps[i]; ++r) fns[i]();
      samples[i].push_back((now_ms() - t0) / reps[i]);
    }
  std::vector<double> med;
  for (auto& s : samples) med.push_back(median(s));
  return med;
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

void pin_to(int threads) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int n = threads == 1 ? 1 : int(std::thread::hardware_concurrency());
  for (int c = 0; c < n; ++c) CPU_SET(c, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

}  // namespace bench
