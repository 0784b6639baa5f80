// Timing and reporting helpers shared by the benchmarks.
#pragma once

#include <functional>
#include <vector>

namespace bench {

double median(std::vector<double> v);
double now_ms();
// Medians (ms per call) of several callables. On one thread they are timed
// round-robin, so drift and noise hit all alike, each round starting one
// callable later, so none is always timed right after the same other one;
// each sample follows untimed calls (as many as it times, a few ms at least,
// and on while they still speed up), so every callable is timed with its
// own data as warm as it would be when run alone. Fewer were not enough
// where two callables' data together overflow the last cache: a GEMV whose
// 16 MB B shared a 32 MB L3 with a library's own B ran 2.3x slower timed
// first after the library than timed second (Zen 4); after 3 ms of untimed
// calls, a GEMV's 64 MB B timed after a 64 MB buffer ran 1.35x slower than
// timed after itself (Xeon). On several threads, each is timed in its own
// block: interleaving would let one library's idle-spinning workers (OpenMP
// spins after every parallel region) steal the cores the next one runs on.
std::vector<double> time_interleaved(const std::vector<std::function<void()>>& fns, double budget_ms, bool blocks);
double geomean(const std::vector<double>& v);
// Pins the process to CPU 0 (threads == 1) or to every core.
void pin_to(int threads);

}  // namespace bench
