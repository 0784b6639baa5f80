// Timing and reporting helpers shared by the benchmarks.
#pragma once

#include <functional>
#include <vector>

namespace bench {

double median(std::vector<double> v);
double now_ms();
// Medians (ms per call) of several callables. On one thread they are timed
// round-robin, so drift and noise hit all alike; each sample follows an
// untimed call, so every callable is timed with its own data warm, as it
// would be when run alone. On several, each is timed
// in its own block: interleaving would let one library's idle-spinning
// workers (OpenMP spins after every parallel region) steal the cores the
// next one runs on.
std::vector<double> time_interleaved(const std::vector<std::function<void()>>& fns, double budget_ms, bool blocks);
double geomean(const std::vector<double>& v);
// Pins the process to CPU 0 (threads == 1) or to every core.
void pin_to(int threads);

}  // namespace bench
