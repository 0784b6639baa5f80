// Microbenchmarks for what cpuid and sysfs cannot tell about the host core:
// the clock it actually runs at, FMA throughput and latency per vector width
// (and FMAs fed by broadcasts), read bandwidth from each cache level and
// from DRAM, what rows read in place cost when they crowd one L1 set, and how
// fast L1 is refilled when the lines of a stream fall in a few of its sets.
//
// Cycles are counted against a dependent chain of integer additions, which
// take one cycle on every out-of-order core, so no vendor table and no
// nominal frequency is needed. Each figure is the best of a few short
// repetitions (the machine is shared: interference only ever slows a run
// down). The whole probe takes a few hundred milliseconds; callers cache it.
#pragma once

#include <vector>

#include "loom/hwspec.h"

namespace loom {

struct FmaProbe {
  int vector_bits = 0;
  double gflops = 0;          // fp32, independent chains, one core
  double latency_cycles = 0;  // one dependent chain
  // Cycles per FMA when each takes an operand broadcast from memory (the
  // broadcasts of an outer product; they bind where they cost more than
  // an FMA slot).
  double broadcast_cycles = 0;
};

struct HostProbe {
  double frequency_ghz = 0;     // while the probes ran
  std::vector<FmaProbe> fma;    // each vector width the ISA offers, narrowest first
  // Read bandwidth of one core (GB/s) from a buffer resident in each cache
  // of `caches` (same order), then from DRAM; 0 where it was not measured.
  std::vector<double> cache_gbs;
  double dram_gbs = 0;
  // The same, read in short runs scattered over rows (what a tile walking
  // down the rows of a large matrix sees: no prefetcher follows it);
  // 0 where not measured (L1 always).
  std::vector<double> cache_scattered_gbs;
  double dram_scattered_gbs = 0;
  // Cycles an outer-product step pays beyond its FMAs when the rows of A it
  // reads in place fall in one L1 set, associativity + 0, 1, 2, ... of
  // them; empty where not measured.
  std::vector<double> l1_crowded_set_cycles;
  // Cycles per line L1 is refilled at from L2 when a stream's lines fall in
  // 1, 2, 4, ... of its sets (CacheLevel::set_stream_cycles); empty where
  // not measured.
  std::vector<double> l1_set_stream_cycles;
  double elapsed_ms = 0;
};

// Runs the probes on the calling thread. `widest_bits` bounds the vector
// widths tried (the ISA's), `caches` sizes the bandwidth buffers.
HostProbe probe_host(int widest_bits, const std::vector<CacheLevel>& caches);

// Whether vector FMAs per cycle measured on one core lie between whole FMA
// units (more than 0.2 from one): on a quiet core the rate is a whole number
// of units (a 512-bit FMA on two 256-bit pipes is one), so such a reading was
// disturbed and is measured again.
bool between_whole_units(double fmas_per_cycle);

// Whether a clock reading taken right after a width's FMA probe is below 0.6
// of the highest clock read before it (`steady_ghz`): the thread did not run
// all that time (a hypervisor's steal, another process on the core), which
// slows the FMA stream and the clock probe alike. Their ratio, the FMA units,
// then looks whole while both rates are low, and that width is measured
// again (a guest read 0.93 GHz and 14.8 GFLOP/s at 256 bits, once, where it
// reads 4.0 GHz and 128). Wide vectors lower some cores' clocks by a fifth:
// no disturbance.
bool clock_disturbed(double ghz, double steady_ghz);

// Writes the probe's figures into `cpu`: frequency, peak, FMA units and
// latency at cpu.vector_bits, L1 load bytes per cycle, cache and DRAM
// bandwidths. Fields the probe could not measure keep their values.
void apply_probe(const HostProbe& probe, CpuSpec& cpu);

}  // namespace loom
