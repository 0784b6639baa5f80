// A timing harness: warm-up, repeats, median, optional cache flush.
#pragma once

#include <functional>
#include <vector>

namespace loom {

struct TimingOptions {
  int warmup = 2;
  int repeats = 10;           // at least this many timed runs
  double min_total_ms = 50;   // and keep going until this much time is spent
  int max_repeats = 1000;
  bool flush_cache = false;   // evict caches before each timed run
};

struct TimingResult {
  double median_ms = 0;
  double min_ms = 0;
  std::vector<double> samples_ms;
};

TimingResult time_function(const std::function<void()>& fn, const TimingOptions& options = {});

}  // namespace loom
