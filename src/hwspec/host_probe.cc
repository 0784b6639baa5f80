// The host microbenchmarks. x86 vector widths use the ISA's intrinsics in
// functions compiled for that ISA (target attributes), so the library itself
// needs no -march flag; other architectures measure only the clock and the
// bandwidths with 128-bit generic vectors.
#include "hwspec/host_probe.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom {

namespace {

using Clock = std::chrono::steady_clock;

// Best (shortest) wall time of `reps` calls of run(iters), in seconds.
template <class F>
double best_seconds(F&& run, long iters, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    run(iters);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// Iterations that make run(iters) last about `seconds` (at least one).
template <class F>
long calibrate(F&& run, double seconds) {
  for (long iters = 1;; iters *= 4) {
    const double t = best_seconds(run, iters, 1);
    if (t > seconds / 8 || iters > (1L << 40)) return std::max(1L, long(double(iters) * seconds / std::max(t, 1e-9)));
  }
}

volatile float g_sink;  // keeps the probes' results alive

constexpr int kFmaRetries = 3;  // disturbed FMA readings measured again, over all widths (~8 ms each)
constexpr size_t kScatterRowBytes = 16 << 10;  // a row of a 4096-float matrix
constexpr size_t kScatterRunBytes = kScatteredRunBytes;  // four cache lines of it

// 16 dependent integer additions per iteration: 16 cycles on any core that
// adds in one cycle; the loop's own instructions run beside them.
__attribute__((noinline)) uint64_t add_chain(long iters) {
  uint64_t x = 1;
  for (long i = 0; i < iters; ++i) {
    const uint64_t step = uint64_t(i) | 1;
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
      x += step;
      asm volatile("" : "+r"(x));
    }
  }
  return x;
}

double measure_ghz() {
  auto run = [](long n) { g_sink = float(add_chain(n)); };
  const long iters = calibrate(run, 1e-3);
  return 16.0 * double(iters) / best_seconds(run, iters, 5) * 1e-9;
}

// A set-crowding probe (below): one per row count.
using CrowdedFn = float (*)(const float* a, size_t stride, const float* b, size_t b_mask, long passes);
constexpr size_t kCrowdSteps = 256;  // a pass: 1 KiB down each row
constexpr int kMaxCrowdRows = 40;
constexpr int kCrowdExcess = 4;  // rows past the associativity measured: 0 to 3

struct VectorProbes {
  int bits, chains;
  float (*chains_fn)(long);
  float (*latency_fn)(long);
  float (*broadcast_fn)(const float*, long);
  float (*read_fn)(const float*, size_t, long);
  float (*scattered_fn)(const float*, size_t, long);
  bool supported;
};

#if defined(__x86_64__)
// Throughput: CHAINS independent accumulators per iteration. Latency: one
// chain, 8 FMAs per iteration. Broadcast: the same chains, each FMA taking
// one operand broadcast from a float in L1 and the other from one vector
// load per iteration (an outer-product micro-kernel's step); the address is
// hidden from the compiler every iteration so that the loads stay. Read bandwidth: CHAINS accumulators of
// consecutive aligned vectors, `passes` times over the buffer. Scattered
// read bandwidth: the buffer as rows of kScatterRowBytes, read in runs of
// kScatterRunBytes, one run from each row in turn (a register tile walking
// down the rows of a large matrix), so that no prefetcher sees a run long
// enough to follow.
#define LOOM_VECTOR_PROBES(BITS, TARGET, VEC, SET1, FMADD, CHAINS)                                       \
  __attribute__((target(TARGET), noinline)) float fma_chains_##BITS(long iters) {                         \
    VEC acc[CHAINS];                                                                                      \
    const VEC m = SET1(0.999999f), c = SET1(1e-7f);                                                       \
    for (int j = 0; j < CHAINS; ++j) acc[j] = SET1(float(j));                                             \
    for (long i = 0; i < iters; ++i) {                                                                    \
      _Pragma("GCC unroll 32") for (int j = 0; j < CHAINS; ++j) acc[j] = FMADD(acc[j], m, c);             \
    }                                                                                                     \
    VEC s = acc[0];                                                                                       \
    for (int j = 1; j < CHAINS; ++j) s += acc[j];                                                         \
    return s[0];                                                                                          \
  }                                                                                                       \
  __attribute__((target(TARGET), noinline)) float fma_latency_##BITS(long iters) {                        \
    VEC a = SET1(1.0f);                                                                                   \
    const VEC m = SET1(0.999999f), c = SET1(1e-7f);                                                       \
    for (long i = 0; i < iters; ++i) {                                                                    \
      _Pragma("GCC unroll 8") for (int j = 0; j < 8; ++j) a = FMADD(a, m, c);                             \
    }                                                                                                     \
    return a[0];                                                                                          \
  }                                                                                                       \
  __attribute__((target(TARGET), noinline)) float fma_broadcast_##BITS(const float* p, long iters) {      \
    VEC acc[CHAINS];                                                                                      \
    for (int j = 0; j < CHAINS; ++j) acc[j] = SET1(float(j));                                             \
    for (long i = 0; i < iters; ++i) {                                                                    \
      asm volatile("" : "+r"(p));                                                                         \
      const VEC v = *reinterpret_cast<const VEC*>(p);                                                     \
      _Pragma("GCC unroll 32") for (int j = 0; j < CHAINS; ++j) acc[j] = FMADD(SET1(p[j]), v, acc[j]);    \
    }                                                                                                     \
    VEC s = acc[0];                                                                                       \
    for (int j = 1; j < CHAINS; ++j) s += acc[j];                                                         \
    return s[0];                                                                                          \
  }                                                                                                       \
  __attribute__((target(TARGET), noinline)) float read_##BITS(const float* p, size_t n, long passes) {     \
    constexpr size_t lanes = BITS / 32;                                                                   \
    VEC acc[CHAINS];                                                                                      \
    for (int j = 0; j < CHAINS; ++j) acc[j] = SET1(0.0f);                                                 \
    for (long r = 0; r < passes; ++r)                                                                     \
      for (size_t i = 0; i + CHAINS * lanes <= n; i += CHAINS * lanes) {                                  \
        _Pragma("GCC unroll 32") for (int j = 0; j < CHAINS; ++j) acc[j] +=                               \
            *reinterpret_cast<const VEC*>(p + i + j * lanes);                                             \
      }                                                                                                   \
    VEC s = acc[0];                                                                                       \
    for (int j = 1; j < CHAINS; ++j) s += acc[j];                                                         \
    return s[0];                                                                                          \
  }                                                                                                       \
  __attribute__((target(TARGET), noinline)) float scattered_##BITS(const float* p, size_t n, long passes) { \
    constexpr size_t lanes = BITS / 32, row = kScatterRowBytes / 4, run = kScatterRunBytes / 4;            \
    VEC acc[run / lanes];                                                                                 \
    for (size_t j = 0; j < run / lanes; ++j) acc[j] = SET1(0.0f);                                         \
    for (long r = 0; r < passes; ++r)                                                                     \
      for (size_t at = 0; at < row; at += run)                                                            \
        for (size_t base = at; base + run <= n; base += row) {                                            \
          _Pragma("GCC unroll 16") for (size_t j = 0; j < run / lanes; ++j) acc[j] +=                     \
              *reinterpret_cast<const VEC*>(p + base + j * lanes);                                        \
        }                                                                                                 \
    VEC s = acc[0];                                                                                       \
    for (size_t j = 1; j < run / lanes; ++j) s += acc[j];                                                 \
    return s[0];                                                                                          \
  }

// Set crowding: the steps of an outer-product micro-kernel over ROWS rows of
// A read in place, `stride` floats apart: per step a broadcast from each row
// into its own chain (ROWS past CHAINS share them) and one vector of B, B a
// buffer beyond L1 cycled through (`b_mask` + 1 floats). Each row advances
// one float a step, as A's rows do down the reduction.
#define LOOM_CROWDED_PROBE(BITS, TARGET, VEC, SET1, FMADD, CHAINS)                                       \
  template <int ROWS>                                                                                     \
  __attribute__((target(TARGET), noinline)) float crowded_##BITS(const float* a, size_t stride,            \
                                                                 const float* b, size_t b_mask, long passes) { \
    constexpr int chains = ROWS < CHAINS ? ROWS : CHAINS;                                                 \
    VEC acc[chains];                                                                                      \
    for (int j = 0; j < chains; ++j) acc[j] = SET1(0.0f);                                                 \
    size_t at = 0;                                                                                        \
    for (long p = 0; p < passes; ++p)                                                                     \
      for (size_t k = 0; k < kCrowdSteps; ++k) {                                                          \
        const VEC v = *reinterpret_cast<const VEC*>(b + at);                                              \
        at = (at + BITS / 32) & b_mask;                                                                   \
        _Pragma("GCC unroll 64") for (int r = 0; r < ROWS; ++r) acc[r % chains] =                         \
            FMADD(SET1(a[size_t(r) * stride + k]), v, acc[r % chains]);                                   \
      }                                                                                                   \
    VEC s = acc[0];                                                                                       \
    for (int j = 1; j < chains; ++j) s += acc[j];                                                         \
    return s[0];                                                                                          \
  }                                                                                                       \
  template <int... R>                                                                                     \
  constexpr std::array<CrowdedFn, sizeof...(R)> crowded_table_##BITS(std::integer_sequence<int, R...>) {  \
    return {&crowded_##BITS<R + 1>...};                                                                   \
  }

LOOM_CROWDED_PROBE(256, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, 12)
LOOM_CROWDED_PROBE(512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, 24)
#undef LOOM_CROWDED_PROBE

// The crowding probe of the widest vectors, by row count (1 to kMaxCrowdRows).
std::array<CrowdedFn, kMaxCrowdRows> crowded_probes(int widest_bits) {
  __builtin_cpu_init();
  if (widest_bits >= 512 && __builtin_cpu_supports("avx512f"))
    return crowded_table_512(std::make_integer_sequence<int, kMaxCrowdRows>());
  if (widest_bits >= 256 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return crowded_table_256(std::make_integer_sequence<int, kMaxCrowdRows>());
  return {};
}

LOOM_VECTOR_PROBES(128, "sse2,fma", __m128, _mm_set1_ps, _mm_fmadd_ps, 12)
LOOM_VECTOR_PROBES(256, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, 12)
LOOM_VECTOR_PROBES(512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, 24)
#undef LOOM_VECTOR_PROBES

std::vector<VectorProbes> vector_probes() {
  __builtin_cpu_init();
  return {{128, 12, fma_chains_128, fma_latency_128, fma_broadcast_128, read_128, scattered_128,
           bool(__builtin_cpu_supports("fma"))},
          {256, 12, fma_chains_256, fma_latency_256, fma_broadcast_256, read_256, scattered_256,
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")},
          {512, 24, fma_chains_512, fma_latency_512, fma_broadcast_512, read_512, scattered_512,
           bool(__builtin_cpu_supports("avx512f"))}};
}
#else
std::vector<VectorProbes> vector_probes() { return {}; }
std::array<CrowdedFn, kMaxCrowdRows> crowded_probes(int) { return {}; }
#endif

// A page-aligned buffer of `bytes`, or null. The kernel populates its pages
// in one call, cheaper than a fault per page, and zeroes them: writing them
// once more would cost a pass over DRAM's buffer for nothing (35 ms of the
// probe where the last cache is 300 MiB). Reads time the same on any values.
struct Unmap {
  size_t bytes;
  void operator()(float* p) const { munmap(p, bytes); }
};
std::unique_ptr<float, Unmap> populated_buffer(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) return {nullptr, Unmap{bytes}};
  return {static_cast<float*>(p), Unmap{bytes}};
}

// GB/s reading the first `bytes` of `buffer` again and again with the
// widest read probe.
template <class Read>
double read_gbs(Read read, const float* buffer, size_t bytes, double seconds, int reps) {
  const size_t n = bytes / sizeof(float);
  auto run = [&](long passes) { g_sink = read(buffer, n, passes); };
  // One pass of a buffer as large as the last cache's lasts `seconds` already: it is the first of the repetitions
  // (calibrating would read the buffer once more for nothing).
  if (const double first = best_seconds(run, 1, 1); first >= seconds)
    return double(bytes) / std::min(first, best_seconds(run, 1, reps - 1)) * 1e-9;
  const long passes = calibrate(run, seconds);
  return double(bytes) * double(passes) / best_seconds(run, passes, reps) * 1e-9;
}

// GB/s of one pass of `read` over each of two parts of `bytes`, the best of
// the two: parts nothing has read since the kernel zeroed them. Passes over
// DRAM's buffer once read could come from a last cache that holds part of
// it, and a pass over the whole buffer costs tens of milliseconds.
template <class Read>
double first_pass_gbs(Read read, const float* part0, const float* part1, size_t bytes) {
  double shortest = 1e30;
  for (const float* part : {part0, part1}) {
    auto run = [&](long passes) { g_sink = read(part, bytes / sizeof(float), passes); };
    shortest = std::min(shortest, best_seconds(run, 1, 1));
  }
  return double(bytes) / shortest * 1e-9;
}

// Cycles a step pays when its rows crowd one L1 set: rows associativity + 0,
// 1, ... one way apart (one set), against the same rows a way and a line
// apart (a set each). Never decreasing: more rows in the set never cost
// less, a dip is noise. Empty where no probe runs or the L1 geometry is
// outside the probe's range.
std::vector<double> crowded_set_cycles(int widest_bits, const std::vector<CacheLevel>& caches, double ghz) {
  if (caches.empty() || ghz <= 0) return {};
  const CacheLevel& l1 = caches.front();
  const int64_t way = l1.size_bytes / std::max<int64_t>(1, l1.associativity);
  if (l1.associativity + kCrowdExcess > kMaxCrowdRows || way < int64_t(kCrowdSteps * sizeof(float)) ||
      way % l1.line_bytes != 0)
    return {};
  const std::array<CrowdedFn, kMaxCrowdRows> probes = crowded_probes(widest_bits);
  if (!probes[0]) return {};
  // B streams from beyond L1, as a packed panel does: twice L1, within half of L2.
  const int64_t l2 = caches.size() > 1 ? caches[1].size_bytes : 4 * l1.size_bytes;
  const size_t b_bytes = std::bit_floor(size_t(std::max(2 * l1.size_bytes, std::min<int64_t>(256 << 10, l2 / 2))));
  const int max_rows = int(l1.associativity) + kCrowdExcess;
  auto a = populated_buffer(size_t(max_rows * (way + l1.line_bytes) + 4096) & ~size_t(4095));
  auto b = populated_buffer(b_bytes);
  if (!a || !b) return {};
  auto cycles_per_step = [&](int rows, int64_t stride_bytes) {
    auto run = [&](long passes) {
      g_sink = probes[rows - 1](a.get(), size_t(stride_bytes) / sizeof(float), b.get(), b_bytes / sizeof(float) - 1,
                                passes);
    };
    const long passes = calibrate(run, 1.5e-4);
    return best_seconds(run, passes, 3) * ghz * 1e9 / (double(passes) * kCrowdSteps);
  };
  std::vector<double> extra;
  for (int rows = int(l1.associativity); rows < max_rows; ++rows) {
    const double cost = cycles_per_step(rows, way) - cycles_per_step(rows, way + l1.line_bytes);
    extra.push_back(std::max(extra.empty() ? 0.0 : extra.back(), std::round(cost * 100) / 100));
  }
  return extra;
}

// A buffer of `bytes` on huge pages where the kernel gives them (as the
// runtime's large tensors are), written once so that its pages exist; null
// where it cannot be mapped.
std::unique_ptr<float, Unmap> huge_page_buffer(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  const size_t mapped = (bytes + 2 * kHuge - 1) & ~(kHuge - 1);
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return {nullptr, Unmap{mapped}};
  // The huge-page-aligned part; the mapping is unmapped whole from its start.
  float* aligned = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~uintptr_t(kHuge - 1));
  madvise(aligned, bytes, MADV_HUGEPAGE);
  std::fill(aligned, aligned + bytes / sizeof(float), 0.0f);
  munmap(p, size_t(reinterpret_cast<char*>(aligned) - static_cast<char*>(p)));
  return {aligned, Unmap{mapped - size_t(reinterpret_cast<char*>(aligned) - static_cast<char*>(p))}};
}

// One float from each of `rows` rows `stride` floats apart, in turn, `passes`
// times: each line read once a pass, as a micro-kernel's steps read B's rows
// in place. Four chains, so that the additions never bind.
__attribute__((noinline)) float row_stream(const float* p, size_t stride, size_t rows, long passes) {
  float acc[4] = {};
  for (long r = 0; r < passes; ++r)
    for (size_t i = 0; i + 4 <= rows; i += 4)
      for (size_t j = 0; j < 4; ++j) acc[j] += p[(i + j) * stride];
  return acc[0] + acc[1] + acc[2] + acc[3];
}

// Cycles per line of a stream of rows whose lines fall in 1, 2, 4, ... of
// L1's sets, from L2: rows way / sets bytes apart, 16 times as many as
// those sets hold (with 4 times, a Zen 4 core read a one-set stream at 6.7
// cycles a line; from 8 times up, at 10.3 while the lines stayed in L2), on
// huge pages as the runtime's large tensors are. The list ends before the
// first count within a quarter of a stream over all sets (rows a way and a
// line apart, twice L1's lines). Empty where L1's geometry is outside what
// the probe covers.
std::vector<double> set_stream_cycles(const std::vector<CacheLevel>& caches, double ghz) {
  if (caches.size() < 2 || ghz <= 0) return {};
  const CacheLevel& l1 = caches.front();
  const int64_t way = l1.size_bytes / std::max<int64_t>(1, l1.associativity), line = l1.line_bytes;
  const int64_t all_sets = way / line;
  if (way % line != 0 || (all_sets & (all_sets - 1)) != 0 || l1.associativity > 64 || l1.size_bytes > (1 << 20))
    return {};
  const size_t spread_rows = size_t(2 * l1.size_bytes / line);
  auto buffer = huge_page_buffer(spread_rows * size_t(way + line));
  if (!buffer) return {};
  auto cycles_per_line = [&](int64_t stride_bytes, size_t rows) {
    const size_t stride = size_t(stride_bytes) / sizeof(float);
    auto run = [&](long passes) { g_sink = row_stream(buffer.get(), stride, rows, passes); };
    const long passes = calibrate(run, 1.5e-4);
    return best_seconds(run, passes, 3) * ghz * 1e9 / (double(passes) * double(rows));
  };
  const double spread = cycles_per_line(way + line, spread_rows);
  std::vector<double> cycles;
  for (int64_t sets = 1; sets < all_sets; sets *= 2) {
    const double c = cycles_per_line(way / sets, size_t(16 * l1.associativity * sets));
    if (c <= 1.25 * spread) break;
    cycles.push_back(std::round(c * 100) / 100);
  }
  return cycles;
}

}  // namespace

bool between_whole_units(double fmas_per_cycle) {
  return std::abs(fmas_per_cycle - std::round(fmas_per_cycle)) > 0.2;
}

bool clock_disturbed(double ghz, double steady_ghz) { return ghz < 0.6 * steady_ghz; }

HostProbe probe_host(int widest_bits, const std::vector<CacheLevel>& caches) {
  const auto start = Clock::now();
  HostProbe probe;
  float (*widest_read)(const float*, size_t, long) = nullptr;
  float (*widest_scattered)(const float*, size_t, long) = nullptr;
  int retries = kFmaRetries;
  double steady_ghz = measure_ghz();  // the clock with no vector work before it; the highest reading since
  for (const auto& v : vector_probes()) {
    if (!v.supported || v.bits > widest_bits) continue;
    FmaProbe fma;
    fma.vector_bits = v.bits;
    auto chains = [&](long n) { g_sink = v.chains_fn(n); };
    const long iters = calibrate(chains, 1e-3);
    const double flops = double(iters) * v.chains * (v.bits / 32) * 2;
    fma.gflops = flops / best_seconds(chains, iters, 5) * 1e-9;
    // The clock right after the vector loop: the sustained vector frequency
    // on cores that slow down for wide vectors.
    double ghz = measure_ghz();
    // A core shared with another thread (an SMT sibling, a neighbour's vCPU)
    // slows the FMA stream but not the clock probe, a dependency chain: the
    // FMAs per cycle then fall between whole units, and are measured again
    // (an Emerald Rapids guest read 129 GFLOP/s at 512 bits, 1.5 units, in
    // one detection of three; 173 and 177 in the others).
    // A thread descheduled through the probe slows both alike (clock_disturbed).
    for (; retries > 0 && (between_whole_units(fma.gflops / (ghz * (v.bits / 16))) || clock_disturbed(ghz, steady_ghz));
         --retries) {
      fma.gflops = std::max(fma.gflops, flops / best_seconds(chains, iters, 5) * 1e-9);
      ghz = std::max(ghz, measure_ghz());
    }
    steady_ghz = std::max(steady_ghz, ghz);
    auto latency = [&](long n) { g_sink = v.latency_fn(n); };
    const long lat_iters = calibrate(latency, 1e-3);
    fma.latency_cycles = best_seconds(latency, lat_iters, 5) / (8.0 * double(lat_iters)) * ghz * 1e9;
    alignas(64) static const float operands[64] = {};
    auto broadcast = [&](long n) { g_sink = v.broadcast_fn(operands, n); };
    const long bc_iters = calibrate(broadcast, 1e-3);
    fma.broadcast_cycles = best_seconds(broadcast, bc_iters, 5) / (double(v.chains) * double(bc_iters)) * ghz * 1e9;
    probe.fma.push_back(fma);
    probe.frequency_ghz = ghz;
    widest_read = v.read_fn;
    widest_scattered = v.scattered_fn;
  }
  if (probe.fma.empty()) probe.frequency_ghz = measure_ghz();
  if (widest_read) {
    // A buffer between the previous level's capacity and this one's stays in
    // this level; DRAM's is larger than the last cache four times over (up to
    // 256 MiB), so that a quarter of it leaves the last cache for the next.
    // One populated buffer per level serves both of its probes (populating one is
    // most of the time a level's probes take).
    int64_t inner = 0, last = 0;
    for (const CacheLevel& c : caches) {
      const int64_t bytes =
          std::min<int64_t>(std::max(c.size_bytes / 2, (inner + c.size_bytes) / 2), 32 << 20) & ~int64_t(4095);
      auto buffer = populated_buffer(size_t(bytes));
      if (!buffer) break;
      probe.cache_gbs.push_back(read_gbs(widest_read, buffer.get(), size_t(bytes), 1e-3, 5));
      // L1 is never filled from itself: its scattered figure is not needed.
      // Scattered reads pay a miss in full where streaming hides it, so
      // their buffer stays well inside the level (twice the level within),
      // with rows enough (64) that no prefetcher tracks them all.
      const int64_t scattered_bytes = std::min(bytes, std::max<int64_t>(2 * inner, int64_t(kScatterRowBytes) * 64));
      probe.cache_scattered_gbs.push_back(
          inner > 0 ? read_gbs(widest_scattered, buffer.get(), size_t(scattered_bytes) & ~size_t(kScatterRowBytes - 1),
                               1e-3, 5)
                    : 0.0);
      inner = c.size_bytes;
      last = std::max(last, c.size_bytes);
    }
    // DRAM's buffer in quarters, two timed for each probe.
    const int64_t dram_bytes = std::min<int64_t>(std::max<int64_t>(4 * last, 64 << 20), 256 << 20) &
                               ~int64_t(4 * kScatterRowBytes - 1);
    if (auto buffer = populated_buffer(size_t(dram_bytes))) {
      const size_t quarter = size_t(dram_bytes) / 4;
      const float* q = buffer.get();
      const size_t step = quarter / sizeof(float);
      probe.dram_gbs = first_pass_gbs(widest_read, q, q + step, quarter);
      probe.dram_scattered_gbs = first_pass_gbs(widest_scattered, q + 2 * step, q + 3 * step, quarter);
    }
  }
  probe.l1_crowded_set_cycles = crowded_set_cycles(widest_bits, caches, probe.frequency_ghz);
  probe.l1_set_stream_cycles = set_stream_cycles(caches, probe.frequency_ghz);
  probe.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return probe;
}

void apply_probe(const HostProbe& probe, CpuSpec& cpu) {
  if (probe.frequency_ghz > 0.1 && probe.frequency_ghz < 10) cpu.frequency_ghz = probe.frequency_ghz;
  for (const FmaProbe& f : probe.fma) {
    if (f.vector_bits != cpu.vector_bits || f.gflops <= 0) continue;
    const double flops_per_fma = 2.0 * cpu.fp32_lanes();
    cpu.fma_units = std::clamp(int(std::lround(f.gflops / (cpu.frequency_ghz * flops_per_fma))), 1, 8);
    cpu.fma_latency = std::clamp(int(std::lround(f.latency_cycles)), 1, 64);
    if (f.broadcast_cycles > 0) cpu.broadcast_fma_cycles = std::clamp(f.broadcast_cycles, 0.05, 16.0);
    cpu.peak_gflops_per_core = f.gflops;
  }
  for (size_t i = 0; i < probe.cache_gbs.size() && i < cpu.caches.size(); ++i)
    if (probe.cache_gbs[i] > 0) cpu.caches[i].bandwidth_gbs = probe.cache_gbs[i];
  // A scattered figure above the streaming one is noise (the machine is
  // shared): reading in short runs is never faster.
  for (size_t i = 0; i < probe.cache_scattered_gbs.size() && i < cpu.caches.size(); ++i)
    if (probe.cache_scattered_gbs[i] > 0)
      cpu.caches[i].scattered_bandwidth_gbs = std::min(probe.cache_scattered_gbs[i], cpu.caches[i].bandwidth_gbs);
  if (!probe.l1_crowded_set_cycles.empty() && !cpu.caches.empty())
    cpu.caches.front().crowded_set_cycles = probe.l1_crowded_set_cycles;
  if (!cpu.caches.empty()) cpu.caches.front().set_stream_cycles = probe.l1_set_stream_cycles;
  if (!probe.cache_gbs.empty() && probe.cache_gbs[0] > 0)
    cpu.load_bytes_per_cycle = std::clamp(int(std::lround(probe.cache_gbs[0] / cpu.frequency_ghz / 8)) * 8, 8, 4096);
  if (probe.dram_gbs > 0) {
    cpu.dram_core_bandwidth_gbs = probe.dram_gbs;
    cpu.dram_bandwidth_gbs = std::max(cpu.dram_bandwidth_gbs, probe.dram_gbs);
    if (probe.dram_scattered_gbs > 0)
      cpu.dram_core_scattered_bandwidth_gbs = std::min(probe.dram_scattered_gbs, probe.dram_gbs);
  }
}

}  // namespace loom
