#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "loom/timing.h"

namespace loom {

namespace {
double now_ms() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
}

// Writes a buffer larger than any last-level cache, evicting kernel data.
void flush_caches() {
  static std::vector<char> scratch(256 << 20);
  static char value = 0;
  std::memset(scratch.data(), ++value, scratch.size());
}
}  // namespace

TimingResult time_function(const std::function<void()>& fn, const TimingOptions& options) {
  for (int i = 0; i < options.warmup; ++i) fn();
  TimingResult r;
  double total = 0;
  while (int(r.samples_ms.size()) < options.max_repeats &&
         (int(r.samples_ms.size()) < options.repeats || total < options.min_total_ms)) {
    if (options.flush_cache) flush_caches();
    double t0 = now_ms();
    fn();
    double dt = now_ms() - t0;
    r.samples_ms.push_back(dt);
    total += dt;
  }
  std::vector<double> sorted = r.samples_ms;
  std::sort(sorted.begin(), sorted.end());
  r.min_ms = sorted.front();
  size_t n = sorted.size();
  r.median_ms = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  return r;
}

}  // namespace loom
