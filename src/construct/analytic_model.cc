#include "construct/analytic_model.h"
#include "construct/gpu_model.h"

#include <algorithm>
#include <bit>
#include <boost/container/small_vector.hpp>
#include <cmath>
#include <numeric>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "loom/buffer.h"
#include "schedule/prefetch_hints.h"
#include "schedule/schedule.h"

namespace loom {

namespace {

// Per-axis and per-level scratch of the estimate, which the traversal calls
// for every state it weighs: on the stack for any realistic operator.
template <typename T>
using Small = boost::container::small_vector<T, 8>;

double ceil_div(double a, double b) { return std::ceil(a / b); }

// Bytes per second one core reads from memory level `i` (0: L1, ...,
// caches.size(): DRAM): the spec's measured figure, else 64 bytes per cycle
// from L1, halving per level outward.
double read_bandwidth(const CpuSpec& c, size_t i) {
  if (i < c.caches.size() && c.caches[i].bandwidth_gbs > 0) return c.caches[i].bandwidth_gbs * 1e9;
  if (i == c.caches.size() && c.dram_core_bandwidth_gbs > 0) return c.dram_core_bandwidth_gbs * 1e9;
  return 64.0 / double(int64_t(1) << std::min<size_t>(i, 3)) * c.frequency_ghz * 1e9;
}

// The same for reads in short runs scattered over rows, which no prefetcher
// follows: the spec's measured figure, else the streaming one.
double scattered_bandwidth(const CpuSpec& c, size_t i) {
  if (i < c.caches.size() && c.caches[i].scattered_bandwidth_gbs > 0) return c.caches[i].scattered_bandwidth_gbs * 1e9;
  if (i == c.caches.size() && c.dram_core_scattered_bandwidth_gbs > 0) return c.dram_core_scattered_bandwidth_gbs * 1e9;
  return read_bandwidth(c, i);
}

// Bytes per second of reads in runs of `run` bytes that no prefetcher
// covers, from level `i`. A run shorter than the spec's scattered figure
// was measured on (kScatteredRunBytes) pays the same fixed cost per run
// (the miss, a page walk when it starts another page) for fewer bytes: the
// cost that figure adds to streaming the probe's run. From a cache, the
// out-of-order window overlaps those misses unless the runs `crowd` L1's
// sets, evicting each other's lines: short runs then read at the scattered
// figure too (measured on one core, a run per row from L2: 64-byte runs at
// 75 GB/s and 256-byte ones at 77 with rows 63 lines apart; 24 and 71 with
// rows 64 lines apart, all in one set; from DRAM, 7 and 14).
// Longer runs read at the scattered figure (measured: 1 KiB runs a page
// apart read no faster from DRAM than 256-byte ones).
double demand_bandwidth(const CpuSpec& c, size_t i, double run, bool crowd) {
  const double stream = read_bandwidth(c, i), scattered = scattered_bandwidth(c, i);
  const double probe_run = double(kScatteredRunBytes);
  if (run >= probe_run || (i < c.caches.size() && !crowd)) return scattered;
  const double per_run_s = std::max(0.0, probe_run / scattered - probe_run / stream);
  return run / (per_run_s + run / stream);
}

// Prefetchers follow a run of consecutive lines once they have seen its
// first kPrefetchLeadBytes (schedule.h), and stop at a page boundary; they
// track a handful of runs at a time. (These are the common behaviour of
// hardware prefetchers, not one vendor's figures; how much a run that nobody
// prefetches costs is the spec's measured scattered bandwidth.) Tracking 16
// runs rather than 8, 90 benchmark shapes' picks ran 1.012x faster (geomean;
// 32: the same geomean, with 1024^3 and 80x2304x768 GEMMs picked 1.2x slower).
constexpr double kPageBytes = 4096;
constexpr double kTrackedRuns = 16;

// The memory level a pack into the private cache at tile level `level`
// fills from: the next level out, where its parent tile lives (1: L2).
size_t pack_source_level(const StateData& s, int level) { return size_t(std::max(0, s.reg_level() - 1 - level)) + 1; }

// Whether cache `level` is filled from far away: from a cache other cores
// share, from one past the core's first two levels (a VM may show its last
// cache as unshared), or from memory. Demand misses from there that no
// prefetcher follows outlast the out-of-order window: while the
// micro-kernel computes, the window holds only the few misses of its next
// steps, so their time adds to the compute time instead of hiding under it
// as streams and misses to a private cache do (measured: a 7x7 512->512 3x3
// convolution whose weights, a channel block's rows 2 KB apart and taps
// 1 MB apart, came from L3 for every pixel tile ran 3.4 ms where 2.1 were
// predicted overlapped; states reading them once ran 2.4 ms).
bool filled_from_afar(const CpuSpec& c, size_t level) {
  const size_t from = level + 1;
  return from >= 2 || from >= c.caches.size() || c.caches[from].shared_by_cores > 1;
}

// Bytes of a cache one core's working set can count on: its share, less a
// quarter for everything else passing through.
double usable_capacity(const CacheLevel& c) { return c.core_share() * 0.75; }

// The share of `bytes` that the next run of a kernel reads into cache `c`
// (at `level`, 0: L1) from farther out, for a problem of `footprint` bytes
// that does not fit. A cache whose replacement resists thrashing keeps about
// its usable capacity of a sweep repeated run after run, so a problem just
// past its size, swept once a run, mostly hits (measured: an l2 norm whose
// input and output, 2 MB and 4 bytes, overflow a 2 MB L2 ran at about 300
// GB/s, where counting it all from L3 tied every state and picked one
// 1.4-1.5x slower). Applied only there, where all-or-nothing is most wrong: L1's
// traffic is the kernel's own re-reads, and larger problems or ones read
// many times a run keep the whole charge (applied to every problem swept
// once, picks moved 0.80-1.14, geomean 0.997).
double repeated_sweep_missed(const CacheLevel& c, size_t level, double bytes, double footprint) {
  constexpr double kNearFit = 1.25;
  if (level == 0 || bytes <= 0 || bytes > kNearFit * footprint || footprint > kNearFit * c.core_share()) return 1;
  return std::max(0.0, bytes - usable_capacity(c)) / bytes;
}

// The nearest memory level, from `first` (0: L1) outward, whose usable
// capacity holds `bytes` (memory past the last): where a run of the kernel
// finds a tensor of that size, as kernels run repeatedly.
size_t level_holding(const CpuSpec& cpu, double bytes, size_t first) {
  size_t level = first;
  while (level < cpu.caches.size() && bytes > usable_capacity(cpu.caches[level])) ++level;
  return level;
}

// Bytes per second one core reads from that level.
double bandwidth_of_level_holding(const CpuSpec& cpu, double bytes, size_t first) {
  return read_bandwidth(cpu, level_holding(cpu, bytes, first));
}

// How many times its own bytes the data tile of `x` occupies in a cache
// that stream prefetchers fill: a run shorter than its row brings the next
// kPrefetchLeadBytes of the row too, which the prefetcher runs ahead into
// (measured: a GEMM reading B in place in strips of 32 floats, rows 1.8-4.4
// KB apart, whose 512 KB strip with A's rows should have stayed in a 2 MB L2
// across 4 row blocks; each row block after the first cost what reading all
// of B from L3 costs).
double streamed_share(const Access& x, const int64_t* tile) {
  if (x.const_shape.size() < 2 || x.dim_terms.size() < 2) return 1;
  const double run = 4 * x.run_elems(tile), row = 4 * double(x.const_shape.back());
  return run >= row ? 1 : std::min(row, run + kPrefetchLeadBytes) / run;
}

// The share of the cache lines an unpacked read's runs of `run` elements
// bring that the runs use: the run's bytes over the lines', less where the
// runs start off a line's start and span one more line. Runs start where
// their rows and tiles put them: a row of N floats starts N * 4 bytes into
// the lines after the one before, so a run of 32 floats spans 2 lines on
// rows of 1008 floats and 2 or 3 (2.5) on rows of 1000 (measured: matmul
// 37x1000x4096 with B read in place, tiles of 32 columns, swept down 14-row
// blocks from L2, ran the same state 1.2-1.6x its time at 1008 columns).
double run_line_use(const Access& x, double run, int line_bytes) {
  const int64_t line = std::max(4, line_bytes);
  const double bytes = 4 * run, use = std::min(1.0, bytes / double(line));
  if (x.const_shape.empty() || run >= double(x.const_shape.back())) return use;
  const int64_t row = 4 * x.const_shape.back(), step = std::gcd(std::gcd(row, int64_t(bytes)), line);
  double lines = 0;  // summed over the starts: the multiples of `step` within a line
  for (int64_t start = 0; start < line; start += step) lines += std::ceil((double(start) + bytes) / double(line));
  const double mean_lines = lines * double(step) / double(line);
  return use * std::ceil(bytes / double(line)) / mean_lines;
}

// The share of the elements that tiles `tile` of access `x` read over the
// whole iteration space (`full`) that lie in memory: a padded read's tiles
// at the borders reach the padding, which is not there. Along a dimension,
// the tiles' extents summed, less what the padding adds to the whole
// (measured: a 3x3 depthwise convolution on 7x7 by 960 channels, whose
// padded input is 9x9, ran at the host's peak with its input's bytes,
// counted 9x9, over the demand misses' bandwidth predicted 1.4x that).
double in_memory_share(const Access& x, const int64_t* tile, const int64_t* full) {
  if (x.source_shape.size() != x.dim_terms.size()) return 1;
  double share = 1;
  for (size_t d = 0; d < x.dim_terms.size(); ++d) {
    const auto& row = x.dim_terms[d];
    const double excess = Access::dim_extent(row, full) - double(x.source_shape[d]);
    if (excess <= 0) continue;
    double read = Access::dim_extent(row, tile);
    for (const Access::Term& t : row) read *= ceil_div(double(full[t.axis]), double(tile[t.axis]));
    share *= std::max(0.0, read - excess) / read;
  }
  return share;
}

// The part of a read in runs of `bytes` that prefetchers do not cover.
double demand_share(double bytes) { return std::min(1.0, kPrefetchLeadBytes / std::min(bytes, kPageBytes)); }

// The extent along axis `a` of the tile that level-l loops cut: the
// parent tile, cut to the axis (tiles may be larger than a short axis);
// reduction axes are whole at level 0.
double parent_extent(const StateData& s, const AnchorInfo& an, int l, int a) {
  const double extent = double(an.plan_extent(a));
  if (l == 0 || (l == 1 && an.is_reduce_axis(a))) return extent;
  return std::min(extent, double(s.tile[l - 1][a]));
}

// Trip count of level-l loops over axis a inside the parent tile.
double trips(const StateData& s, const AnchorInfo& an, int l, int a) {
  return ceil_div(parent_extent(s, an, l, a), double(s.tile[l][a]));
}

// trips() of every level and axis (the tile table's shape), computed once
// per estimate: the walk's hot path asks for them again for every access and
// granularity.
class TripTable {
 public:
  TripTable(const StateData& s, const AnchorInfo& an) : axes_(size_t(s.num_axes)) {
    for (int l = 0; l < s.levels(); ++l)
      for (int a = 0; a < s.num_axes; ++a) table_.push_back(trips(s, an, l, a));
  }
  double operator()(int l, int a) const { return table_[size_t(l) * axes_ + size_t(a)]; }

 private:
  size_t axes_;
  StateStorage<double> table_;
};

// Extent along axis `a` of the region a pack at `point` copies.
double pack_extent(const StateData& s, const AnchorInfo& an, int point, int a) {
  const int level = s.pack_level(point);
  const double extent = double(an.plan_extent(a));
  if (s.pack_opens_loop(point, a)) return std::min(extent, double(s.tile[level][a]));
  return level == 1 && an.is_reduce_axis(a) ? extent : std::min(extent, double(s.tile[level - 1][a]));
}

// Bytes each prefetch stream of an access covers, in the order the loops
// touch them. A stream is the part of the micro-kernel's data tile within
// a page: the contiguous axis, then the next-strided axes while their span
// stays within a page (the rows of an NHWC window are one stream each).
// While the streams are few enough to be tracked, each enclosing loop
// (innermost first) that steps along a stream's axes lengthens them; the
// first loop that moves the access another way ends them.
double stream_bytes(const StateData& s, const AnchorInfo& an, const TripTable& trip, const Access& x,
                    const Small<int64_t>& micro) {
  Small<int> axes;
  for (int a = 0; a < an.num_axes(); ++a)
    if (x.uses_axis[a] && x.stride[a] && micro[a] > 1) axes.push_back(a);
  std::sort(axes.begin(), axes.end(), [&](int a, int b) { return std::abs(*x.stride[a]) < std::abs(*x.stride[b]); });
  Small<int64_t> stream_tile(micro.size(), 1);
  double span = 1;  // elements
  for (int a : axes) {
    const double stride = double(std::abs(*x.stride[a]));
    const double wider = span + stride * double(micro[size_t(a)] - 1);
    if (span > 1 && 4 * wider > kPageBytes) break;  // past the page
    span = wider;
    stream_tile[size_t(a)] = micro[size_t(a)];
  }
  if (x.data_tile(micro.data()) / x.data_tile(stream_tile.data()) > kTrackedRuns) return 4 * span;
  for (int l = s.reg_level(); l >= 0; --l) {
    const auto order = s.order[l];
    for (const int* it = order.end(); it != order.begin();) {
      const int a = *--it;
      if (!x.uses_axis[a] || (l == 0 && an.is_reduce_axis(a))) continue;
      const double k = trip(l, a);
      if (k <= 1) continue;
      if (stream_tile[size_t(a)] == 1) return 4 * span;  // not along the streams
      span += double(std::abs(*x.stride[a])) * double(s.tile[l][a]) * (k - 1);
    }
  }
  return 4 * span;
}

// The most lines of `line` bytes, sets `way` bytes apart, that the points
// sum of k_i * stride_i (0 <= k_i < R_i; `progressions` holds R, stride
// pairs, in elements) put in one set; 0 when they lie within one line.
int64_t lines_per_set(const Small<int64_t>& progressions, int64_t line, int64_t way) {
  std::vector<int64_t> offsets{0}, next;
  for (size_t i = 0; i < progressions.size(); i += 2) {
    next.clear();
    for (int64_t o : offsets)
      for (int64_t k = 0; k < progressions[i]; ++k) next.push_back(o + k * progressions[i + 1] * 4);
    offsets.swap(next);
    if (offsets.size() > 4096) return 0;  // beyond any register tile
  }
  for (int64_t& o : offsets) o = o >= 0 ? o / line : -((-o + line - 1) / line);  // line index
  std::sort(offsets.begin(), offsets.end());
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  if (offsets.size() < 2) return 0;
  const int64_t sets = std::max<int64_t>(1, way / line);
  for (int64_t& o : offsets) o = ((o % sets) + sets) % sets;
  std::sort(offsets.begin(), offsets.end());
  int64_t most = 0;
  for (size_t i = 0, j = 0; i < offsets.size(); i = j) {
    while (j < offsets.size() && offsets[j] == offsets[i]) ++j;
    most = std::max<int64_t>(most, int64_t(j - i));
  }
  return most;
}

// lines_per_set for key = {line, way, R, stride, ...}: states a traversal
// estimates share a few hundred register tiles and reduction blocks among
// thousands, so counts are remembered (per thread, a bounded table).
int64_t remembered_lines_per_set(const Small<int64_t>& key) {
  struct Hash {
    size_t operator()(const Small<int64_t>& k) const {
      size_t h = 0;
      for (int64_t v : k) h = h * 1000003 ^ std::hash<int64_t>()(v);
      return h;
    }
  };
  thread_local std::unordered_map<Small<int64_t>, int64_t, Hash> counted;
  if (auto it = counted.find(key); it != counted.end()) return it->second;
  if (counted.size() > 65536) counted.clear();
  const Small<int64_t> progressions(key.begin() + 2, key.end());
  return counted.emplace(key, lines_per_set(progressions, key[0], key[1])).first->second;
}

// The most lines one micro-kernel step of an unpacked access puts in one L1
// set: the register tile's elements over its spatial axes (the vector axis
// is one run), lines of `line` bytes, sets a `way` apart. With `steps` > 1,
// the lines of that many steps along reduction axis `r` together: a window
// sliding with a tiled axis reads the same lines again, which count once.
// 0 when they lie within one line.
// `tile` holds the spatial axes' extents where they are not the register
// tile's.
int64_t tile_lines_per_set(const StateData& s, const AnchorInfo& an, const Access& x, int64_t line, int64_t way,
                           int r = -1, int64_t steps = 1, const int64_t* tile = nullptr) {
  Small<int64_t> key{line, way};
  if (!tile) tile = s.tile[s.reg_level()];
  for (int a = 0; a < an.num_axes(); ++a) {
    const int64_t R = a == r ? steps : a < an.num_spatial ? tile[a] : 1;
    if (a == s.vec_axis || R <= 1 || !x.uses_axis[a] || !x.stride[a]) continue;
    key.push_back(R);
    key.push_back(*x.stride[a]);
  }
  return remembered_lines_per_set(key);
}

// Bytes a cache's sets span: addresses this far apart share a set.
int64_t way_bytes(const CacheLevel& c) {
  return std::max<int64_t>(c.line_bytes, c.size_bytes / std::max<int64_t>(1, c.associativity));
}

// Cycles a micro-kernel step pays when `lines` of the lines it reads in
// place fall in one L1 set. Past the associativity the set thrashes: each
// of its lines is a demand miss a step, refilled at half of L2's streaming
// rate (4 cycles a line on a Zen 4 core; 16 bytes a cycle where the spec
// has no L2 bandwidth). At the associativity, or where the spec measured
// more (a table over associativity + 0, 1, ..., extended along its last
// slope), the measured figure.
double crowded_step_cycles(const CpuSpec& cpu, int64_t lines) {
  const CacheLevel& l1 = cpu.caches.front();
  const int64_t excess = lines - l1.associativity;
  if (excess < 0) return 0;
  double thrash = 0;
  if (excess > 0) {
    const double l2_gbs = cpu.caches.size() > 1 ? cpu.caches[1].bandwidth_gbs : 0;
    const double refill_bytes_per_cycle = l2_gbs > 0 ? l2_gbs / cpu.frequency_ghz / 2 : 16.0;
    thrash = double(lines) * double(l1.line_bytes) / refill_bytes_per_cycle;
  }
  const std::vector<double>& measured = l1.crowded_set_cycles;
  if (measured.empty()) return thrash;
  const size_t last = measured.size() - 1;
  const double slope = last > 0 ? std::max(0.0, measured[last] - measured[last - 1]) : 0.0;
  const double probed = size_t(excess) <= last ? measured[size_t(excess)]
                                               : measured[last] + slope * double(size_t(excess) - last);
  return std::max(thrash, probed);
}

// Cycles a line refilled into a thrashed L1 set adds to a micro-kernel step
// beyond what overlaps with its FMAs: what the host measured per line when
// every line of a crowded set misses (the crowding table's last entry, rows
// enough to thrash the set), 0 where the spec has no table. Measured: 0.11
// on a Zen 4 core at 512 bits, 0.54 on the same core at 256 (two FMA pipes,
// so half the cycles a step to hide the refill in).
double thrashed_line_cycles(const CpuSpec& cpu) {
  const CacheLevel& l1 = cpu.caches.front();
  const std::vector<double>& measured = l1.crowded_set_cycles;
  if (measured.empty()) return 0;
  return measured.back() / double(std::max<int64_t>(1, l1.associativity + int64_t(measured.size()) - 1));
}

// Whether a later micro-kernel call reads the data a call reads of `x`
// again while it may still be in L1, and what the calls read in between:
// `tile`, a call's block, widened along the loops around the calls that
// move `x`, innermost first, up to the first loop that runs more than once
// and does not move it (the one that comes back), while the widened tile's
// bytes fit `capacity`; false when no loop comes back before then. The
// tile stays in L1 over many calls while the other accesses' lines pass
// through every set, so a set it fills to the last way loses lines to them
// (measured: matmul 688x768x3072 reading B's rows 3 KB apart in place, two
// 32 x 80 tiles of it in turn, 8 lines a set, swept down 90 row tiles of A:
// 1.55x the time of the states that reread B from L2 each call, which the
// model had put 1.02x slower).
bool widen_to_reread(const StateData& s, const TripTable& trip, const Access& x, Small<int64_t>& tile,
                     const Small<int64_t>& full, double capacity) {
  for (int level = s.reg_level(); level >= 0; --level) {  // the register level's loops run the calls
    const auto order = s.order[level];
    for (const int* it = order.end(); it != order.begin();) {
      const int a = *--it;
      const double k = trip(level, a);
      if (k <= 1) continue;
      if (!x.uses_axis[a]) return true;
      tile[a] = std::min(full[a], int64_t(double(tile[a]) * k));
      if (4 * x.data_tile(tile.data()) > capacity) return false;
    }
  }
  return false;
}

// Access i of the anchor's body, or its output where i == accesses.size().
const Access& access_or_output(const AnchorInfo& an, size_t i) {
  return i == an.accesses.size() ? an.output : an.accesses[i];
}

enum class Placement { Contiguous, Pages, HugePages };

// Where access i of a state (i == accesses.size(): the output) reads from:
// a packed copy is contiguous; a materialized producer sits in the kernel's
// scratch memory, on ordinary pages; a tensor from the runtime's huge-page
// size up is on huge pages.
Placement placement(const StateData& s, const AnchorInfo& an, size_t i) {
  const bool output = i == an.accesses.size();
  if (!output && s.pack[i] >= 0) return Placement::Contiguous;
  if (!output && s.materialized(i)) return Placement::Pages;
  double bytes = 4;
  for (int64_t size : access_or_output(an, i).const_shape) bytes *= double(size);
  return bytes >= double(Buffer::kHugePageBytes) ? Placement::HugePages : Placement::Pages;
}

// The most lines of cache `c` that access `x`'s data box for axis tiles
// `tile` puts in one set (0 for a contiguous copy, which spreads evenly).
// The box is runs of contiguous bytes, one per point of its outer
// dimensions. A run's set is fixed by its address modulo the cache's way on
// huge pages, else only modulo the page, the physical page picking one of
// way / page set groups at random. Along a dimension d, the runs' fixed
// parts repeat every P_d = span / gcd(stride_d, span) steps, so there are at
// most min(prod_d min(extent_d, P_d), span / gcd_d(...)) of them, taken as
// evenly spaced, each spread over the set groups; runs sharing a start
// share its sets. A box whose rows are a power of two apart fills a few
// sets while the rest stay empty: a GEMM's rows of 2304 floats on huge pages
// put 16 lines a set into a quarter of a 1024-set cache.
double box_lines_per_set(const Access& x, const int64_t* tile, const CacheLevel& c, Placement where) {
  const int ndim = int(x.dim_terms.size());
  if (where == Placement::Contiguous || c.associativity <= 0 || int(x.const_shape.size()) != ndim) return 0;
  const int64_t way = way_bytes(c);
  const int64_t span = where == Placement::HugePages ? way : std::min(way, int64_t(kPageBytes));
  // gcd(a, b) for b dividing span, by a's lowest set bit where span is a power of two (as ways and pages are).
  const bool power_of_two = (span & (span - 1)) == 0;
  auto gcd = [&](int64_t a, int64_t b) { return a == 0 ? b : power_of_two ? std::min(b, a & -a) : std::gcd(a, b); };
  int64_t stride = 4, run = 4, spacing = span;  // spacing: the gcd of the strides, modulo span
  double runs = 1, starts = 1;
  bool contiguous = true;  // the box so far is one run
  for (int d = ndim - 1; d >= 0; --d) {
    const int64_t size = x.const_shape[size_t(d)];
    const int64_t extent = std::min(size, int64_t(Access::dim_extent(x.dim_terms[size_t(d)], tile)));
    if (contiguous) {
      run = extent * stride;
      contiguous = extent == size;
    } else if (extent > 1) {
      const int64_t g = gcd(stride % span, span);
      runs *= double(extent);
      starts *= double(std::min(extent, span / g));
      spacing = gcd(g, spacing);
    }
    stride *= size;
  }
  starts = std::min(runs, std::min(starts, double(span / spacing)) * double(way / span));
  const double sets = double(std::max<int64_t>(1, way / c.line_bytes));
  return std::max(runs * std::ceil(double(run) / double(c.line_bytes)) / sets, std::ceil(runs / starts));
}

// An element-wise consumer left out of the write-back runs as a pass of its
// own: it reads the anchor's result back and writes its own, from the
// nearest level both fit in (measured: dense 688x3072x768 + bias + GELU,
// 8 MB results read from L3, 0.6 ms slower unfused than fused).
double unfused_consumer_seconds(const CpuSpec& cpu, double result_bytes) {
  return 2 * result_bytes / bandwidth_of_level_holding(cpu, 2 * result_bytes, 0);
}

// Copies of the micro-kernel lowering makes along axis `a` for remainders
// of known size (StateData::peels_remainder_at): the leaves of the tree of
// sizes the axis's tiles cut its extent into. A remainder not peeled leaves
// the sizes below it unknown: one copy.
int64_t remainder_copies(const StateData& s, const AnchorInfo& an, int a) {
  const int64_t E = an.const_extent[size_t(a)];
  if (E <= 0) return 1;
  const int reg = s.reg_level();
  const bool reduce = an.is_reduce_axis(a);
  constexpr int kBound = StateData::kMaxMicroKernelCopies;
  // Each level at most doubles the sizes, and the loop stops past the bound.
  boost::container::small_vector<int64_t, 2 * (kBound + 1)> known{E}, next;
  int64_t unknown = 0;
  for (int l = reduce ? 1 : 0; l <= reg && int64_t(known.size()) + unknown <= kBound; ++l) {
    const int64_t T = s.tile[l][a];
    const bool peels = s.peels_remainder_at(an, l, a);
    next.clear();
    for (int64_t size : known) {
      if (size <= T || size % T == 0) {
        next.push_back(std::min(size, T));
      } else if (peels) {
        next.push_back(T);
        next.push_back(size % T);
      } else {
        ++unknown;
      }
    }
    known.swap(next);
  }
  return int64_t(known.size()) + unknown;
}

}  // namespace

// On Zen 3, matmul 127x127x1023 in 4x16 tiles with K cut at 744 then 248
// (3 copies along K, 3 along N, 2 along M) ran 0.82 ms, and with K cut at
// 248 alone (12 copies) 0.56 ms; the model had them equal.
bool peels_known_remainders(const StateData& s, const AnchorInfo& an) {
  int64_t copies = 1;
  for (int a = 0; a < an.num_axes() && copies <= StateData::kMaxMicroKernelCopies; ++a)
    copies *= remainder_copies(s, an, a);
  return copies <= StateData::kMaxMicroKernelCopies;
}

namespace {

// Whether lowering knows the size of every register tile along spatial
// axis `a` (lower/cpu/tiled_nest.cc): a known extent, a nest that peels
// its remainders, and along the vector axis always (its remainders are
// peeled at every level), elsewhere when the parallel tiles divide the
// extent or cover it (the remainders below are peeled,
// StateData::peels_remainder_at), or when every size the enclosing tiles
// take is a multiple of the register tile (14 in tiles of 8, then of 2).
bool register_tiles_sized_statically(const StateData& s, const AnchorInfo& an, int a, bool peels) {
  std::optional<int64_t> extent = an.extents[a].as_const_int();
  if (!extent || !peels) return false;
  if (a == s.vec_axis && s.vec_width > 1) return true;
  int64_t size = *extent, multiple = size;  // size: while every tile so far is known
  bool known = true;
  for (int l = 0; l < s.reg_level(); ++l) {
    const int64_t T = s.tile[l][a];
    if (known && (size <= T || s.peels_remainder_at(an, l, a))) continue;
    if (multiple % T == 0) {
      size = multiple = T;
      known = true;
      continue;
    }
    known = false;
    multiple = std::gcd(multiple, T);
  }
  return known || multiple % s.tile[s.reg_level()][a] == 0;
}

// How fast the micro-kernel runs one reduction step of register block `t`
// (its spatial sizes; the reduction axes at their per-step size).
struct BlockRate {
  double accumulators = 1;
  double ilp = 1;     // min(1, accumulator chains / FMAs in flight)
  double issue = 1;   // the part of the step left to loads: ilp * issue = FMA cycles / step cycles
  double step_cycles = 1;  // how long a step lasts: its FMAs, its loads or one FMA latency, the longest
  double spilled = 0; // live vectors beyond the register file
  bool gathers = false;
};

// Operations an out-of-order core's reorder window holds: a common size
// (224-512 on current cores), not one vendor's.
constexpr double kReorderWindowOps = 224;

// Stride prefetchers follow a load instruction whose address steps by a
// constant stride, once it has run a few times: runs this long.
constexpr double kStrideRun = 8;

// A vector operand a step's FMAs read this many times or more is held in
// registers across them; one read fewer times is loaded into each FMA
// (LLVM's register allocation, measured on depthwise blocks: see
// block_rate).
constexpr double kHeldOperandUses = 3;

// Whether the micro-kernel's loads of `x` step at a constant stride for
// long runs: the innermost reduction loop that moves `x`, and that is not
// unrolled whole (its copies are separate loads), runs each of its loads
// kStrideRun times or more in a row, less than a page apart (prefetchers
// stop at a page boundary; a stride of a page or more puts every load in
// another one). (A GEMM's B rows, K after K, are, when a row is under a
// page; a convolution's weights read a few taps 1 MB apart, then the next
// channel, are not.) An access no reduction loop moves is left to the
// streams.
bool read_at_constant_stride(const StateData& s, const AnchorInfo& an, const UnrolledReduction& unrolled,
                             const Access& x) {
  const auto order = s.order[s.reg_level() - 1];
  for (const int* it = order.end(); it != order.begin();) {
    const int r = *--it;
    const int64_t R = call_trips(s, an, r);
    if (!an.is_reduce_axis(r) || R <= 1 || !x.uses_axis[r]) continue;
    const double runs = r == unrolled.axis ? double(R) / double(unrolled.copies) : double(R);
    if (runs > 1) return runs >= kStrideRun && x.stride[r] && double(std::abs(*x.stride[r])) * 4 < kPageBytes;
  }
  return true;
}

// The prefetch hints lowering gives the micro-kernel's reads of unpacked
// access `x` (schedule/prefetch_hints.h): none where it is not read in
// rows with gaps along the innermost reduction loop.
HintReach hints_of(const StateData& s, const AnchorInfo& an, const UnrolledReduction& unrolled, const Access& x,
                   const CpuCaches& caches) {
  if (unrolled.axis < 0 || s.vec_axis < 0) return {};
  const int64_t run = std::min(s.tile[s.reg_level()][s.vec_axis], an.plan_extent(s.vec_axis));
  const std::optional<int64_t> stride = gapped_row_stride(s, an, x, unrolled.axis, run, caches.line_bytes / 4);
  if (!stride) return {};
  return hint_reach(*stride, run, step_vector_fmas(s, run), call_trips(s, an, unrolled.axis), caches);
}

// The share of `bytes`, what a run of the kernel reads of an input into a
// cache, that hints `h` leave to demand misses: all unless they reach far
// enough ahead for where the lines come from (L1's few rows cover a miss to
// another cache, a miss to memory takes L2's); then none where every pass
// is hinted, else all but the first pass, the input's `once` bytes
// (measured: matmul 37x4096x1000 reading B in place by 20x16 tiles, two
// passes over rows 16 KB apart, ran 2.8-3.1 ms, its FMAs' 2.7, where both
// passes' misses charged as stalls put it at 4.1 and a pick that packed B,
// 3.8-4.7 ms, first).
double unhinted_share(const HintReach& h, bool from_memory, double once, double bytes) {
  if ((from_memory ? h.l2_rows : h.l1_rows) == 0 || bytes <= 0) return 1;
  return h.every_pass ? 0 : std::max(0.0, 1 - once / bytes);
}

// The spatial axis of register block `t` along which access `x` slides over
// the unrolled copies (oh + kh: row i of tap k is row i + 1 of tap k - 1);
// -1 when it does not.
int sliding_axis(const Access& x, const AnchorInfo& an, const UnrolledReduction& u, const Small<int64_t>& t) {
  if (u.axis < 0) return -1;
  for (int a = 0; a < an.num_spatial; ++a)
    if (t[a] > 1 && x.slides_with(a, u.axis)) return a;
  return -1;
}

// How many micro-kernel calls run their FMA chains side by side. A call
// that computes its outputs' whole reduction starts from fresh
// accumulators, so the next call does not wait for it: where a call's FMAs
// are few next to the reorder window, the core issues the next calls' into
// its chains' latency (measured: 3x3 depthwise 56x56 c144 in tiles of 1x4
// outputs by 8 channels, 4 accumulators and 36 FMAs a call, ran 0.12-0.14
// ms, where charging every call its own chains put its compute alone at
// 0.16). One where a call goes on with the accumulators an earlier one
// left (a GEMM's K blocks) or its reduction is long.
double calls_in_flight(const StateData& s, const AnchorInfo& an, double accumulators) {
  double steps = 1;
  for (int r = an.num_spatial; r < s.num_axes; ++r) {
    const int64_t R = call_trips(s, an, r);
    if (R < an.plan_extent(r)) return 1;
    steps *= r == s.vec_axis ? ceil_div(double(R), s.vec_width) : double(R);
  }
  return std::max(1.0, kReorderWindowOps / (steps * accumulators));
}

BlockRate block_rate(const StateData& s, const AnchorInfo& an, const CpuSpec& cpu, const Small<int64_t>& t) {
  BlockRate r;
  const int W = s.vec_axis >= 0 ? s.vec_width : 1;
  double elems = 1;
  for (int a = 0; a < s.num_axes; ++a)
    elems *= a == s.vec_axis ? ceil_div(double(t[a]), W) * W : double(t[a]);
  r.accumulators = std::max(1.0, elems / W);
  // Copies of a small block's accumulators run their chains side by side (accumulator_copies).
  const auto copies = double(accumulator_copies(s, an, int64_t(r.accumulators), cpu.fma_latency * cpu.fma_units,
                                                cpu.vector_registers));
  const double in_flight = calls_in_flight(s, an, r.accumulators);
  const double chains = r.accumulators * copies * in_flight;
  r.ilp = an.is_reduction ? std::min(1.0, chains / double(cpu.fma_latency * cpu.fma_units)) : 1.0;
  double loads = 0;
  // Operand registers live across one reduction step: the vectors of the
  // access with the fewest (kept for the whole tile; an outer product) plus
  // one streaming in; broadcasts need one. When an access slides over the
  // unrolled copies, a copy's operands are loaded again by the next, and
  // LLVM keeps them live together: a broadcast operand's for every copy.
  // Where the copies are the whole loop and the access reads the tensor
  // itself (not a packed copy) along another axis than the vector's (shifted
  // vectors are other loads), common-subexpression elimination loads its
  // window once for all of them (and does not when a remainder cuts the
  // loop: measured, a 3x3 convolution's rows in taps of 2); a vector
  // operand (a depthwise window along the channels) then keeps one vector
  // column's window live, the column consumed before the next, beside the
  // other vector operands' vectors for every copy (its weights for the
  // taps): all of a tap's vectors where three or more FMAs of a step read
  // each, one where fewer do (LLVM then loads them into the FMAs). Measured
  // on LLVM's code for 3x3 depthwise blocks on 32 registers: those this
  // count fits in keep a few registers on the stack at most, the others
  // spill every step, those of 24 accumulators all; a block of 1x5 outputs
  // by 64 channels, its weights counted a vector a tap, spilled 12 registers
  // a step and ran 1.7x the time of 1x4 by 64 (on 16 registers LLVM fits
  // blocks of 9 or 10 accumulators this count passes by 2). Only the
  // window's elements some copy reads again stay live: those read by one
  // copy alone (a stride-2 window's odd columns) are loaded into their FMA.
  // A broadcast operand keeps its whole window, an element a register
  // (measured: LLVM's code for a 3x3 convolution's column of 26 rows keeps
  // the 28 rows' broadcasts across the taps, spilling them).
  double operand_vectors = 1e30, sliding_live = 0;
  double column_vectors = 0;  // of the vector operands not sliding along a vector column's window, per step
  bool slides = false, column_window = false;
  const UnrolledReduction unrolled = unrolled_reduction(s, an);
  // A vector load moves vector_bytes at the L1 load bandwidth; a scalar
  // load takes one of the two load ports, a broadcast the spec's measured
  // cycles; a gathered vector is assembled an element per cycle (a scalar
  // load and an insert each).
  const double vector_cost = std::max(0.5, double(cpu.vector_bits / 8) / double(cpu.load_bytes()));
  const double broadcast_cost = W > 1 && cpu.broadcast_fma_cycles > 0 ? cpu.broadcast_fma_cycles : 0.5;
  for (size_t i = 0; i < an.accesses.size(); ++i) {
    const Access& x = an.accesses[i];
    const bool along_vector = s.vec_axis >= 0 && x.uses_axis[s.vec_axis];
    const bool contiguous = along_vector && (s.pack[i] >= 0 || x.stride[s.vec_axis] == 1);
    const bool gathered = along_vector && !contiguous;
    r.gathers |= gathered;
    const int slide = sliding_axis(x, an, unrolled, t);
    slides |= slide >= 0;
    const bool shared = slide >= 0 && slide != s.vec_axis && unrolled.whole && s.pack[i] < 0;
    // A vector operand's loads are the vectors its step touches (every other
    // row of a stride-2 window's box: measured, LLVM's code loads those).
    // A broadcast operand's are counted over its box: touched elements
    // moved strided convolutions' picks to wider, slower blocks (1x to 0.5x
    // side by side), a cost of theirs this count does not see otherwise.
    const auto step_data = [&](const int64_t* tile) { return along_vector ? x.touched_tile(tile) : x.data_tile(tile); };
    const double tile_data = step_data(t.data());
    double window_data = tile_data;  // the copies' union
    if (shared) {
      Small<int64_t> window = t;
      window[unrolled.axis] *= unrolled.copies;
      window_data = step_data(window.data());
    }
    const double data = shared ? window_data / double(unrolled.copies) : tile_data;
    loads += contiguous ? data / W * vector_cost : gathered ? data : data * broadcast_cost;
    operand_vectors = std::min(operand_vectors, along_vector ? std::ceil(tile_data / W) : 1.0);
    if (along_vector && !shared) {
      double uses = 1;  // FMAs of a step that read each of its vectors: the tile's positions it does not move with
      for (int a = 0; a < an.num_spatial; ++a)
        if (!x.uses_axis[a]) uses *= double(t[a]);
      column_vectors += uses < kHeldOperandUses ? 1 : std::ceil(tile_data / W);
    }
    if (shared) {
      // At most as many elements as reads beyond each element's first.
      const double reused = std::min(window_data, tile_data * double(unrolled.copies) - window_data);
      sliding_live = std::max(sliding_live, (along_vector ? reused / double(t[s.vec_axis]) : reused) + 1);
      column_window |= along_vector;
    }
  }
  if (column_window) sliding_live += column_vectors * double(unrolled.copies);
  // Accumulators and operands beyond the register file spill: each spilled
  // register is stored and reloaded in every reduction step.
  const double copies_live = sliding_live > 0 ? sliding_live
                             : slides         ? (operand_vectors + 1) * double(unrolled.copies)
                                              : operand_vectors + 1;
  const double live = (an.is_reduction ? r.accumulators * copies : 0) + (an.accesses.empty() ? 0 : copies_live);
  r.spilled = std::max(0.0, live - double(cpu.vector_registers));
  // A step lasts as long as its FMAs, its loads (in cycles) or, for a
  // reduction, one FMA latency (each accumulator's chain; shared by the
  // calls in flight); these overlap, so ilp * issue = FMA cycles / the longest.
  const double fma_cycles = r.accumulators / cpu.fma_units;
  const double chain = an.is_reduction ? double(cpu.fma_latency) / (in_flight * copies) : 0.0;
  r.step_cycles = std::max({fma_cycles, chain, loads});
  r.issue = std::max(fma_cycles, chain) / r.step_cycles;
  return r;
}

// Calls f(block, share) for each kind of register block the nest runs: the
// register tile, and along each statically sized spatial axis the
// remainders lowering peels into bodies of their own size (the extent cut
// by each level's tile in turn); `share` is the part of the points it
// computes. Axes cut at run time count as whole tiles (their slower path
// is a penalty of its own).
template <typename F>
void for_each_register_block(const StateData& s, const AnchorInfo& an, const Small<int64_t>& t, bool peels, F&& f) {
  using Sizes = Small<std::pair<int64_t, double>>;  // block size, share of the extent
  Small<Sizes> sizes(size_t(an.num_spatial));
  for (int a = 0; a < an.num_spatial; ++a) {
    const int64_t extent = an.plan_extent(a);
    if (extent % s.tile[s.reg_level()][a] == 0 || !register_tiles_sized_statically(s, an, a, peels)) {
      sizes[a] = {{t[a], 1.0}};
      continue;
    }
    Sizes chunks{{extent, 1.0}}, next;  // chunk length, count
    for (int l = 0; l <= s.reg_level(); ++l) {
      const int64_t T = s.tile[l][a];
      next.clear();
      auto add = [&](int64_t len, double count) {
        for (auto& c : next)
          if (c.first == len) return void(c.second += count);
        next.push_back({len, count});
      };
      for (auto [len, count] : chunks) {
        if (len <= T) {
          add(len, count);
          continue;
        }
        add(T, count * double(len / T));
        if (len % T) add(len % T, count);
      }
      chunks.swap(next);
    }
    for (auto& c : chunks) c.second *= double(c.first) / double(extent);
    sizes[a] = chunks;
  }
  Small<int64_t> block = t;
  auto visit = [&](auto&& self, int a, double share) -> void {
    if (a == an.num_spatial) return f(block, share);
    for (auto [size, part] : sizes[a]) {
      block[a] = size;
      self(self, a + 1, share * part);
    }
  };
  visit(visit, 0, 1.0);
}

// Cycles per line L1 is refilled at when the lines of a stream fall in
// `sets` of its sets, and a pass over them reads `bytes`: the host's figure
// from L2 (CacheLevel::set_stream_cycles, by the power of two at or below
// `sets`), scaled by L2's bandwidth over that of the level holding the
// bytes. Their sets crowd L2 too, but less than its geometry says (a guest's
// huge pages are not always the host's): measured on a Zen 4 guest, a
// stream of rows 16 KiB apart, one line each, 8 of L2's sets by its
// geometry, read 128-640 rows at 10.3-10.6 cycles a line, 771 at 11.0, 1000
// at 12.9 and 2400 at 23. 0 where the spec has no figure for that many
// sets: no such limit.
double set_stream_line_cycles(const CpuSpec& cpu, int64_t sets, double bytes) {
  if (cpu.caches.empty() || sets < 1) return 0;
  const std::vector<double>& measured = cpu.caches.front().set_stream_cycles;
  const size_t k = size_t(std::bit_width(uint64_t(sets)) - 1);
  if (k >= measured.size()) return 0;
  return measured[k] * read_bandwidth(cpu, 1) / bandwidth_of_level_holding(cpu, bytes, 1);
}

// Cycles the micro-kernel's steps wait, beyond their own, on the lines of
// access `x` that each step reads afresh in a stream over `sets` of L1's
// sets, `bytes` a pass. A step's run of lines falls in as many neighbouring
// sets, so the stream spreads over their product (measured on a Zen 4 core,
// rows 16 KiB apart: 10.3 cycles a step for a line each, 15.5 for two).
// Each kind of register block waits at its own rate: a remainder's few FMAs
// a step cannot hide the stream that a full tile's hide. Only the steps
// whose lines no hint asks for ahead wait. Lowering hints the first pass
// over the access (the first tile along the loops that do not move it, a
// full one), and every pass where the micro-kernel reads faster than L2
// delivers (HintReach). Measured: matmul 37x4096x1000 reading B's rows 16
// KiB apart in place ran 3.2-3.7 ms in 30-row tiles and a 7-row remainder,
// of which the 30 rows alone took 2.2, and 2.8 ms in 20-row tiles and a
// 17-row remainder.
double stream_wait_cycles(const StateData& s, const AnchorInfo& an, const CpuSpec& cpu, const Small<int64_t>& t,
                          const BlockRate& rate, const Access& x, const HintReach& hints, int64_t sets,
                          double bytes, const Small<int64_t>& full, bool peels) {
  if (hints.every_pass || set_stream_line_cycles(cpu, sets, bytes) == 0) return 0;
  double points = 1;
  for (int64_t extent : full) points *= double(extent);
  const double first_pass = x.touched_tile(full.data());  // elements, read once
  const double line_elems = double(cpu.caches.front().line_bytes) / 4;
  double cycles = 0;
  bool hinted = hints.l1_rows > 0;  // the first kind of block visited runs the hinted first pass
  for_each_register_block(s, an, t, peels, [&](const Small<int64_t>& block, double share) {
    const double step_cycles = (block == t ? rate : block_rate(s, an, cpu, block)).step_cycles;
    const double touched = x.touched_tile(block.data());
    double block_points = 1;
    for (int64_t size : block) block_points *= double(size);
    double unhinted = share * points / block_points;
    if (std::exchange(hinted, false)) unhinted = std::max(0.0, unhinted - first_pass / touched);
    const double lines = std::ceil(touched / line_elems);
    const double line_cycles = set_stream_line_cycles(cpu, sets * int64_t(lines), bytes);
    cycles += unhinted * std::max(0.0, line_cycles * lines - step_cycles);
  });
  return cycles;
}

// The spatial axes along which lowering takes the register tiles that
// reach the padding out of the loop over the others (border_tiles in
// schedule/state.h): a guarded read in place, the tiles around the register
// tiles spanning the axis, tiles between the borders, and the copies of the
// micro-kernel within lowering's bound. Each axis multiplies them by its
// segments (each peeled tile and the loop between them, or a peeled
// remainder); where they are too many, the innermost axis runs its border
// tiles in the loop first, as in lowering. Counted where it was measured,
// for windows read a vector at a time (depthwise, pooling); a convolution's
// broadcast input, not measured, is charged as before (crediting it moved
// the walk over a 3x3/2 convolution, 31x31 29->61, to a pick 1.2x slower).
// An axis of one or two tiles is not counted either: its tiles sat at known
// positions before (a loop of one trip, a peeled remainder), and were
// charged their guards all the same; crediting them moved 7x7 and 14x14/2
// depthwise picks to tiles of 4 or 5 rows that ran 1.15-1.45x slower than
// the picks charged, for costs the model does not see.
Small<bool> border_tiles_out_of_loop(const StateData& s, const AnchorInfo& an, bool peels) {
  Small<bool> peeled(size_t(an.num_axes()), false), between(size_t(an.num_axes()), false);
  bool windows = false;  // a guarded read in place, a vector at a time
  for (size_t i = 0; i < an.accesses.size(); ++i)
    windows |= s.reads_through_guard(an, i) && s.pack[i] < 0 && s.vec_axis >= 0 &&
               an.accesses[i].uses_axis[size_t(s.vec_axis)];
  if (!windows || s.target != TargetKind::Cpu || !peels) return peeled;
  const int reg = s.reg_level();
  Small<int64_t> segments(size_t(an.num_axes()), 1);
  auto remainder_segments = [&](int a) {
    const int64_t E = an.const_extent[size_t(a)], T = s.tile[reg][a];
    return E > T && E % T != 0 ? 2 : 1;
  };
  int64_t copies = 1;
  for (int a = 0; a < an.num_spatial; ++a) {
    const int64_t E = an.const_extent[size_t(a)], T = s.tile[reg][a];
    if (E <= 0) continue;
    bool spans = a != s.vec_axis;
    for (int l = 0; l < reg; ++l) spans &= s.tile[l][a] >= E;
    const std::optional<BorderTiles> b = spans ? border_tiles(s, an, a, 0, E) : std::nullopt;
    peeled[size_t(a)] = b.has_value();
    between[size_t(a)] = b && (E + T - 1) / T > b->lead + b->trail;
    segments[size_t(a)] = b ? b->lead + b->trail + between[size_t(a)] : remainder_segments(a);
    copies *= segments[size_t(a)];
  }
  for (auto it = s.order[reg].end(); copies > StateData::kMaxMicroKernelCopies && it != s.order[reg].begin();) {
    const int a = *--it;
    if (!peeled[size_t(a)]) continue;
    peeled[size_t(a)] = false;
    copies = copies / segments[size_t(a)] * remainder_segments(a);
  }
  for (int a = 0; a < an.num_spatial; ++a) peeled[size_t(a)] = peeled[size_t(a)] && between[size_t(a)];
  return peeled;
}

// The share of the reduction's steps the micro-kernel runs where it skips
// those that read only padding (lower/cpu/tiled_nest.cc, padding_skips),
// which it does where every padded read comes from a buffer holding the
// padding. Along each padded axis: each element's own taps where the
// tile's position and the taps are known at compile time (a tile spanning
// the axis, or the peeled remainder of an axis cut into one region, their
// taps whole in the micro-kernel and unrolled within the copies lowering
// allows; a tile of one element at run time), else, per tile, every tap
// some element of it reads inside. The axes' bounds are independent (a
// window's rows and its columns): their shares multiply.
double executed_share(const StateData& s, const AnchorInfo& an) {
  if (an.padded_axes.empty() || s.target != TargetKind::Cpu) return 1;
  for (size_t i = 0; i < an.accesses.size(); ++i)
    if (s.reads_through_guard(an, i) && s.pack[i] < 0) return 1;
  const int reg = s.reg_level();
  double share = 1;
  int64_t copies = 1;  // of the unrolled tap loops
  for (const PaddedAxis& p : an.padded_axes) {
    const int64_t E = int64_t(p.taps.size()), K = an.const_extent[size_t(p.tap)];
    const int64_t R = std::min(E, s.tile[reg][p.axis]);
    bool one_region = true;
    for (int l = 0; l < reg; ++l) one_region &= s.tile[l][p.axis] >= E;
    const bool fixed = one_region && s.tile[reg - 1][p.tap] >= K && copies * K <= StateData::kMaxUnrolledTapCopies;
    if (fixed) copies *= K;
    int64_t executed = 0;
    for (int64_t x0 = 0; x0 < E; x0 += R) {
      const int64_t n = std::min(R, E - x0);
      const bool exact = R == 1 || (fixed && (n < R || R == E));  // one element, a remainder, the whole axis
      int64_t lo = K, hi = -1, own = 0;
      for (int64_t x = x0; x < x0 + n; ++x) {
        const auto [first, last] = p.taps[size_t(x)];
        if (first > last) continue;
        own += last - first + 1;
        lo = std::min(lo, first);
        hi = std::max(hi, last);
      }
      executed += exact ? own : n * std::max<int64_t>(0, hi - lo + 1);
    }
    share *= double(executed) / double(E * K);
  }
  return share;
}

}  // namespace

double Estimate::objective(int k) const {
  if (k == 0) return compute_s;
  if (k <= caches) return level_s[k - 1];
  if (k == caches + 1) return pack_s + penalty_s;
  return seconds * (1.0 / std::max(balance, 1e-6) - 1.0);
}

std::string Estimate::str() const {
  std::ostringstream os;
  os << "t=" << seconds * 1e3 << "ms compute=" << compute_s * 1e3 << "ms traffic=[";
  for (int i = 0; i < caches; ++i) os << (i ? " " : "") << level_s[i] * 1e3;
  os << "]ms stall=[";
  for (int i = 0; i < caches; ++i) os << (i ? " " : "") << stall_s[i] * 1e3;
  os << "]ms pack=" << pack_s * 1e3 << "ms penalty=" << penalty_s * 1e3 << "ms balance=" << balance
     << " vec=" << vector_util << " ilp=" << ilp;
  return os.str();
}

namespace {

// The parallel load balance of state `s` on `threads` threads: the work of
// all level-0 tiles over `threads` times the busiest thread's. The parallel
// loop runs the tiles, its index a mixed-radix number over the level-0
// loops (the outermost its leading digit), in contiguous chunks of equal
// counts (runtime/thread_pool.cc). A tile's work is its points: along each
// axis the last tile holds only what the others leave of the extent
// (measured: matmul 37x1000x1000 on 2 threads in level-0 tiles of 960 and
// 40 columns ran 0.63 ms, as on one thread, where counting tiles gave a
// balance of 1; the pick this finds, tiles of 512 and 488, 0.33 ms).
double parallel_balance(const StateData& s, const AnchorInfo& an, const TripTable& trip, int threads) {
  if (threads <= 1) return 1;
  struct Digit {
    int64_t count;      // tiles along the axis
    double tile, last;  // points along it of a whole tile and of the last one
    double inner = 1;   // points along the axes inside it
    double span() const { return double(count - 1) * tile + last; }
  };
  Small<Digit> digits;  // outermost first
  double tiles = 1;
  for (int a : s.order[0]) {
    const double k = trip(0, a);
    if (an.is_reduce_axis(a) || k <= 1) continue;
    const double tile = double(s.tile[0][a]);
    digits.push_back({int64_t(k), tile, double(an.plan_extent(a)) - (k - 1) * tile});
    tiles *= k;
  }
  if (tiles <= 1) return 1.0 / threads;
  if (tiles > 0x1p52) return tiles / (std::ceil(tiles / threads) * threads);
  for (size_t j = digits.size() - 1; j-- > 0;) digits[j].inner = digits[j + 1].inner * digits[j + 1].span();
  const double total = digits[0].inner * digits[0].span();
  // The points of the tiles before flat index p.
  auto before = [&](int64_t p) {
    if (p >= int64_t(tiles)) return total;
    Small<int64_t> place(digits.size());
    for (size_t j = digits.size(); j-- > 0; p /= digits[j].count) place[j] = p % digits[j].count;
    double points = 0, outer = 1;
    for (size_t j = 0; j < digits.size(); ++j) {
      points += outer * double(place[j]) * digits[j].tile * digits[j].inner;
      outer *= place[j] + 1 < digits[j].count ? digits[j].tile : digits[j].last;
    }
    return points;
  };
  const int64_t n = int64_t(tiles), chunks = std::min<int64_t>(n, threads), base = n / chunks, extra = n % chunks;
  double busiest = 0, done = 0;  // the points of the chunks so far
  for (int64_t c = 0, end = 0; c < chunks; ++c) {
    end += base + (c < extra ? 1 : 0);
    const double upto = before(end);
    busiest = std::max(busiest, upto - done);
    done = upto;
  }
  return total / (double(threads) * busiest);
}

Estimate estimate_cpu(const AnchorInfo& an, const StateData& s, const HwSpec& hw, int threads) {
  Estimate est;
  const CpuSpec& cpu = hw.cpu;
  const int n = s.num_axes, reg = s.reg_level();
  const double freq = cpu.frequency_ghz * 1e9;
  Small<int64_t> full(size_t(n), 0);
  const TripTable trip(s, an);
  double points = 1;
  for (int a = 0; a < n; ++a) {
    full[a] = an.plan_extent(a);
    points *= double(full[a]);
  }
  const double flops = (an.is_reduction ? 2.0 : 1.0) * points;

  // --- compute ---
  const int W = s.vec_axis >= 0 ? s.vec_width : 1;
  const int lanes = cpu.fp32_lanes();
  if (s.vec_axis >= 0) {
    double e = double(full[s.vec_axis]);
    est.vector_util = double(W) / lanes * e / (ceil_div(e, W) * W);
  } else {
    est.vector_util = 1.0 / lanes;
  }
  double reg_elems = 1;
  for (int a = 0; a < n; ++a) reg_elems *= double(s.tile[reg][a]);
  Small<int64_t> t(s.tile[reg], s.tile[reg] + n);  // the register block of one reduction step
  for (int a = an.num_spatial; a < n; ++a)
    if (a != s.vec_axis) t[a] = 1;
  const BlockRate rate = block_rate(s, an, cpu, t);
  const bool peels = peels_known_remainders(s, an);
  const double acc = rate.accumulators, spilled = rate.spilled;
  est.ilp = rate.ilp;
  if (rate.gathers) est.vector_util /= 2.0 * W / lanes + 1;
  const double peak = cpu.peak_gflops_per_core * 1e9;
  // Peeled remainders run bodies of their own, smaller size, with fewer
  // accumulators to hide the FMA latency behind: each kind of register
  // block computes its share of the points at its own rate.
  double slowdown = 0;
  for_each_register_block(s, an, t, peels, [&](const Small<int64_t>& block, double share) {
    const BlockRate r = block == t ? rate : block_rate(s, an, cpu, block);
    slowdown += share / (r.ilp * r.issue);
  });
  est.compute_s = flops * executed_share(s, an) * slowdown / (peak * est.vector_util);

  // --- traffic per cache ---
  // Blocks of the iteration space, innermost first (below), each with a
  // footprint and, with reuse across the innermost enclosing loops an
  // access does not use, a traffic. A cache is charged the traffic of the
  // outermost block whose footprint fits in it.
  struct Traffic {
    double bytes = 0;
    // The part of `bytes` read as demand misses: runs too short for a
    // prefetcher to follow; and that part weighted by what its runs cost
    // against the spec's scattered figure.
    double demand = 0, demand_cost = 0;
    // The part of demand_cost no prefetcher covers: inputs' demand misses
    // that no stride prefetcher follows.
    double unfollowed_cost = 0;
  };
  Small<int64_t> scratch(s.tile[reg], s.tile[reg] + n);  // a micro-kernel call's block
  for (int a = an.num_spatial; a < n; ++a) scratch[a] = reg > 1 ? s.tile[reg - 1][a] : full[a];
  // Per access (the output last): the part of its bytes that arrive as
  // demand misses, from the runs it reads in time order. A packed access
  // reads its own contiguous buffer; its source is read by the pack.
  // Those misses come a run at a time, the run's first bytes before a
  // prefetcher takes over (`demand_run`).
  Small<double> demand_fraction, demand_run, unfollowed;
  Small<HintReach> hints;
  const CpuCaches caches = cpu_caches_of(cpu);
  const UnrolledReduction unrolled = unrolled_reduction(s, an);
  for (size_t i = 0; i <= an.accesses.size(); ++i) {
    const bool packed = i < an.accesses.size() && s.pack[i] >= 0;
    const Access& x = i < an.accesses.size() ? an.accesses[i] : an.output;
    const double run = packed ? kPageBytes : stream_bytes(s, an, trip, x, scratch);
    demand_fraction.push_back(packed ? 0.0 : demand_share(run));
    // An input's demand misses (a run's first bytes, all of a short one)
    // that no stride prefetcher follows: a stream prefetcher covers only
    // what comes after them (measured: matmul 17x4099x331 reading B in place
    // in 640-byte runs 16 KB apart ran 0.58-0.63 ms, 1.5x the states reading
    // 192-byte runs, which alone were charged; with both charged, 90
    // benchmark shapes' picks ran 1.012x faster (geomean), and 1.024x with
    // 16 tracked runs). The passes the micro-kernel's own hints ask ahead
    // for are not charged (unhinted_share).
    const bool input = !packed && i < an.accesses.size();
    unfollowed.push_back(input && !read_at_constant_stride(s, an, unrolled, x) ? 1.0 : 0.0);
    hints.push_back(input ? hints_of(s, an, unrolled, x, caches) : HintReach{});
    demand_run.push_back(std::min({run, kPrefetchLeadBytes, kPageBytes}));
  }
  // Per access, the cost of its demand bytes from the level being charged,
  // against the spec's scattered figure (1: runs as long as the probe's).
  Small<double> demand_weight(demand_run.size(), 1.0);
  // The blocks, innermost first: one micro-kernel call, each loop of a
  // level widening the block it sweeps (the working sets between two
  // levels' tiles, where a window's rows or a panel may fit a cache that
  // the next tile overflows), each level's tile, the parallel tile.
  struct Block {
    Small<int64_t> tile;
    OrderTable::Row<const int> enclosing;
    int level;
    double footprint;           // bytes
    double streamed_footprint;  // with what stream prefetchers bring beside it (streamed_share): for L2 on
    double calls = 0;  // how many times the nest runs the block; 0 until the traffic asks
  };
  // Up to a block per loop of each level, held inline: every state's estimate builds them.
  boost::container::small_vector<Block, 40> blocks;
  auto add_block = [&](const int64_t* t, OrderTable::Row<const int> enclosing, int level) {
    double footprint = 4 * an.output.data_tile(t), streamed = footprint;
    for (size_t i = 0; i < an.accesses.size(); ++i) {
      const double bytes = 4 * an.accesses[i].data_tile(t);
      footprint += bytes;
      streamed += s.pack[i] >= 0 ? bytes : bytes * streamed_share(an.accesses[i], t);
    }
    blocks.push_back({Small<int64_t>(t, t + n), enclosing, level, footprint, streamed});
  };
  auto add_level = [&](const int64_t* tile, int l) {
    Small<int64_t> block(tile, tile + n);
    const auto order = s.order[l];
    add_block(block.data(), order, l);
    for (const int* it = order.end(); it - order.begin() > 1;) {
      const int a = *--it;
      const double parent = parent_extent(s, an, l, a);
      if (double(block[a]) >= parent) continue;
      block[a] = int64_t(std::min(parent, double(block[a]) * trip(l, a)));
      add_block(block.data(), {order.begin(), it}, l);
    }
  };
  add_level(scratch.data(), reg);
  for (int l = reg - 1; l >= 1; --l) add_level(s.tile[l], l);
  for (int a = 0; a < n; ++a) scratch[a] = a < an.num_spatial ? s.tile[0][a] : full[a];
  add_block(scratch.data(), {nullptr, nullptr}, 0);
  // The traffic of access i (i == accesses.size(): the output) over a
  // block's calls into the cache the block fits in (`resident`), or, when
  // nothing fits, of every call streaming its whole data tile.
  const int line_bytes = cpu.caches.empty() ? 64 : cpu.caches.front().line_bytes;
  auto traffic = [&](Block& b, size_t i, bool resident, bool from_memory, Traffic& g) {
    const int64_t* t = b.tile.data();
    const bool output = i == an.accesses.size();
    const Access& x = access_or_output(an, i);
    if (b.calls == 0) {
      b.calls = 1;
      for (int a = 0; a < n; ++a) b.calls *= ceil_div(double(full[a]), double(t[a]));
    }
    const double calls = b.calls;
    const int unit = x.contiguous_axis();
    const double run = unit >= 0 ? double(t[unit]) : 1;
    const double line_util = output || s.pack[i] >= 0 ? 1.0 : run_line_use(x, run, line_bytes);
    // A padded read in place (not from a packed or materialized copy) reads only the tensor.
    const bool in_place = !output && s.pack[i] < 0 && !s.materialized(i);
    auto data = [&](const int64_t* tile) {
      return x.data_tile(tile) * (in_place ? in_memory_share(x, tile, full.data()) : 1.0);
    };
    // Loops that do not move the access reuse its tile; the first that
    // does reads, over its sweep, the union of its tiles once: a window's
    // overlapping rows stay in the cache the tile fits in.
    const double elems = data(t);
    double reuse = 1, per_call = elems;
    for (const int* it = b.enclosing.end(); it != b.enclosing.begin();) {
      const int a = *--it;
      const double k = trip(b.level, a);
      if (!x.uses_axis[a]) {
        reuse *= k;
        continue;
      }
      if (k > 1 && t[a] < parent_extent(s, an, b.level, a)) {
        Small<int64_t> swept(t, t + n);
        swept[a] = int64_t(std::min(double(full[a]), double(t[a]) * k));
        per_call = data(swept.data()) / k;
      }
      break;
    }
    const double streamed = 4 * elems * (output ? 2 : 1) * calls / line_util;
    const double bytes = resident ? streamed * per_call / elems / reuse : streamed;
    g.bytes += bytes;
    g.demand += bytes * demand_fraction[i];
    g.demand_cost += bytes * demand_fraction[i] * demand_weight[i];
    g.unfollowed_cost += bytes * demand_fraction[i] * demand_weight[i] * unfollowed[i] *
                         unhinted_share(hints[i], from_memory, 4 * data(full.data()) / line_util, bytes);
  };
  Small<Placement> places;
  for (size_t i = 0; i <= an.accesses.size(); ++i) places.push_back(placement(s, an, i));
  for (size_t level = 0; level < cpu.caches.size() && level < est.level_s.size(); ++level) {
    const CacheLevel& c = cpu.caches[level];
    const double bandwidth = read_bandwidth(cpu, level + 1);  // filled from the next level out
    const double capacity = usable_capacity(c);
    // L1 holds what the loads bring; the caches out from it, what stream
    // prefetchers bring besides.
    auto held = [&](const Block& b) { return level == 0 ? b.footprint : b.streamed_footprint; };
    // Kernels run repeatedly: a problem that fits in a cache stays there.
    if (held(blocks.back()) <= capacity) {
      est.level_s[est.caches++] = 0;
      continue;
    }
    Block* fit = nullptr;
    for (Block& b : blocks)
      if (held(b) <= capacity) fit = &b;
    for (size_t i = 0; i < demand_run.size(); ++i)
      demand_weight[i] = scattered_bandwidth(cpu, level + 1) / demand_bandwidth(cpu, level + 1, demand_run[i], false);
    // An access whose rows put as many lines into one set as the cache has
    // ways, or more, stays only in the blocks inside where they do not (the
    // block's other accesses pass through those sets too); when nothing
    // fits, every micro-kernel call streams its whole data tile (measured:
    // matmul 1024^3 on a 16-way 2 MiB L2, B's panel of 512 rows 4 KiB apart,
    // 16 lines a set, ran 1.4x the time of the same micro-kernel on panels
    // of 64 rows). Rows that crowd sets less than that, sharing them with
    // the rest of the block, are not counted (measured: counting them as
    // evicted mis-ranked more GEMMs and convolutions than it fixed). L1's
    // conflicts are those of the micro-kernel's own steps (penalties, below).
    auto overflows = [&](const Block& b, size_t i) {
      return box_lines_per_set(access_or_output(an, i), b.tile.data(), c, places[i]) >= double(c.associativity);
    };
    Traffic g;
    for (size_t i = 0; i <= an.accesses.size(); ++i) {
      Block* own = fit;
      while (level > 0 && own && overflows(*own, i)) own = own == blocks.data() ? nullptr : own - 1;
      traffic(own ? *own : blocks.front(), i, own != nullptr, level + 1 == cpu.caches.size(), g);
    }
    const double scattered = scattered_bandwidth(cpu, level + 1);
    const double missed = repeated_sweep_missed(c, level, g.bytes, held(blocks.back()));
    est.level_s[est.caches] = missed * ((g.bytes - g.demand) / bandwidth + g.demand_cost / scattered);
    if (filled_from_afar(cpu, level)) est.stall_s[est.caches] = missed * g.unfollowed_cost / scattered;
    ++est.caches;
  }
  double outer_trips = 1;  // number of level-0 tiles
  for (int a = 0; a < an.num_spatial; ++a) outer_trips *= trip(0, a);

  // --- packing ---
  double hiding_s = est.compute_s;  // what the micro-kernels' time has left to hide packs' reads behind
  for (size_t i = 0; i < s.pack.size(); ++i) {
    if (s.pack[i] < 0) continue;
    const int level = s.pack_level(s.pack[i]);
    const Access& x = an.accesses[i];
    double region = 1, count = outer_trips;
    Small<int64_t> extent(size_t(n), 1);
    for (int a = 0; a < n; ++a) {
      for (int l = 1; l < level; ++l) count *= trip(l, a);
      if (s.pack_opens_loop(s.pack[i], a)) count *= trip(level, a);
      if (x.uses_axis[a]) extent[a] = int64_t(pack_extent(s, an, s.pack[i], a));
      region *= double(extent[a]);
    }
    // Read from the source row by row of the region (runs along the
    // contiguous axis), written once, by a scalar copy loop: four elements
    // a cycle, one where each element tests the padding (measured: a GEMM's
    // packed B, a padded 3x3 convolution's packed input). A halo tile
    // copies each element of the window's data tile once, in rows along
    // the tensor's last dimension.
    const int unit = x.contiguous_axis();
    double run_bytes = unit >= 0 ? 4 * double(extent[unit]) : 4;
    if (s.packs_halo(an, i)) {
      region = x.data_tile(extent.data());
      run_bytes = 4 * x.run_elems(extent.data());
    }
    const double bytes = 4 * region * count, demand = demand_share(run_bytes);
    // Written into the cache the pack's parent tile lives in, and read from
    // there, but for each element's first pack, which reads it from where
    // the operand lives between runs (matmul 7x4096x1000's B, 16 MB, packed
    // once a call in panels of 24 x 200, rows 16 KB apart: from memory, a
    // call 2.8 ms where packing from L3 was estimated at 1.4, against 1.2 for
    // B read in place). Where lowering asks L2 for the next region's source
    // during the current one's micro-kernels (an operand that outgrows L2,
    // in regions read as vector runs: lower/cpu/tiled_nest.cc), reads from
    // a farther cache hide behind the micro-kernels' time, up to it (a 3x3
    // convolution's 9.4 MB of weights, packed 16 input by 24 output channels
    // at a time from L3: charged in full, the pick of 7x7 512->512 left
    // packing for a state that ran 1.4x the time); from memory they do not
    // (matmul 37x4096x1000, B packed 100 x 24 at a time and so hidden, was
    // picked over B packed 100 x 480 and ran 1.16x the time).
    const size_t near = pack_source_level(s, level);
    const double operand_bytes = x.const_bytes().value_or(bytes);  // symbolic: as many as the packs read
    const size_t far = level_holding(cpu, operand_bytes, near);
    const double first = std::min(bytes, operand_bytes);
    auto read_s = [&](double b, size_t from) {
      return b * (1 - demand) / read_bandwidth(cpu, from) + b * demand / scattered_bandwidth(cpu, from);
    };
    const bool ahead = count > 1 && far < cpu.caches.size() &&
                       hints_next_pack_region(s, an, i, operand_bytes, region, caches.l2_bytes);
    const double farther_s = read_s(first, far) - read_s(first, near);
    const double hidden_s = ahead ? std::min(farther_s, hiding_s) : 0;
    hiding_s -= hidden_s;
    est.pack_s += bytes / read_bandwidth(cpu, near) + read_s(bytes, near) + farther_s - hidden_s +
                  region * count / ((s.reads_through_guard(an, i) ? 1 : 4) * freq);
  }
  // A materialized producer is computed once over the region the nest
  // reads, by its own element-wise loop: a vector (or, along a short
  // innermost axis, an element) per iteration, each with its index
  // arithmetic, the guard, a load and a store. Its source is read and its
  // buffer written at the bandwidth of the level both fit in (L2 at best).
  for (size_t i = 0; i < an.accesses.size(); ++i) {
    if (!s.materialized(i)) continue;
    const Access& x = an.accesses[i];
    const double elems = x.data_tile(full.data()), bytes = 8 * elems;
    const int width = x.tensor.shape().empty() ? 1 : vector_width_for(x.tensor.shape().back(), lanes);
    constexpr double kCyclesPerIteration = 8;
    est.pack_s += kCyclesPerIteration * elems / width / freq + bytes / bandwidth_of_level_holding(cpu, bytes, 1);
  }

  // --- penalties ---
  // Register tiles cut short at run time run a slower body; those of a
  // size known when lowering keep the fast one (a narrower last vector is
  // counted in vector_util).
  double slow = 1;
  for (int a = 0; a < an.num_spatial; ++a) {
    const double e = double(full[a]), cut = std::fmod(e, double(s.tile[reg][a]));
    if (cut == 0 || register_tiles_sized_statically(s, an, a, peels)) continue;
    slow *= 1 - cut / e;
  }
  const double slow_frac = 1 - slow;
  est.penalty_s += slow_frac * est.compute_s * 3;
  // Unpacked guarded reads branch per element, but only in register tiles
  // that reach the border: interior tiles run with the guards proven away
  // (vectorized reductions excepted). Along an axis one register tile spans,
  // with the taps sliding over it unrolled whole, each element's test is
  // known when lowering and folds away (the tile's position and the taps
  // are constants): its border costs nothing. So along an axis whose border
  // tiles lowering peels (measured: depthwise 14x14 c384 3x3 in tiles of
  // 2x3 outputs by 48 channels, kw innermost, 127 GFLOP/s with the column
  // tiles in the loop, 140-150 peeled).
  const Small<bool> peeled = border_tiles_out_of_loop(s, an, peels);
  for (size_t i = 0; i < an.accesses.size(); ++i) {
    if (!s.reads_through_guard(an, i) || s.pack[i] >= 0) continue;
    const Access& x = an.accesses[i];
    // Only windowed axes (a spatial axis sharing an index with a reduction
    // axis, like oh*stride + rh) can reach the padding.
    double interior = s.vec_axis < an.num_spatial ? 1 : 0;
    for (int a = 0; a < an.num_spatial && interior > 0; ++a) {
      const bool known_position = peeled[size_t(a)] || s.tile[reg][a] >= full[a];
      const bool folds = known_position && unrolled.whole && x.slides_with(a, unrolled.axis);
      if (x.windowed(a, an.num_spatial) && !folds)
        interior *= std::max(0.0, 1 - 2.0 * double(s.tile[reg][a]) / double(full[a]));
    }
    est.penalty_s += (1 - interior) * points / W * 1.0 / freq;
  }
  double spatial_reg = 1;
  for (int a = 0; a < an.num_spatial; ++a) spatial_reg *= double(s.tile[reg][a]);
  double reduce_blocks = 1;
  for (int a = an.num_spatial; a < n; ++a) reduce_blocks *= ceil_div(double(full[a]), double(s.tile[reg - 1][a]));
  double spatial_points = 1;
  for (int a = 0; a < an.num_spatial; ++a) spatial_points *= double(full[a]);
  const double steps = points / std::max(1.0, reg_elems);  // reduction steps of all micro-kernel calls
  est.penalty_s += steps * spilled / freq;
  // Each micro-kernel call: set-up plus loading and storing its accumulators.
  est.penalty_s += spatial_points / spatial_reg * reduce_blocks * (20.0 + 2.0 * acc) / freq;
  if (an.consumer.defined() && !s.fuse) est.penalty_s += unfused_consumer_seconds(cpu, 4 * spatial_points);
  // A vectorized reduction axis ends every block with a horizontal sum of
  // its lanes per output element (log2(W) shuffle+add pairs).
  if (s.vec_axis >= an.num_spatial)
    est.penalty_s += spatial_points * reduce_blocks * 2.0 * std::log2(double(s.vec_width) + 1) / freq;

  // L1 set conflicts: an unpacked access that reads R lines a fixed stride
  // apart per micro-kernel step maps them to way_bytes / gcd(stride, way)
  // sets; as many lines per set as ways or more, and steps miss L1.
  if (!cpu.caches.empty()) {
    const CacheLevel& l1 = cpu.caches.front();
    const int64_t way = way_bytes(l1);
    const double thrashed_line_s = thrashed_line_cycles(cpu) / freq;
    for (size_t i = 0; i < an.accesses.size(); ++i) {
      if (s.pack[i] >= 0) continue;
      const Access& x = an.accesses[i];
      // The lines one step reads over the register tile's spatial axes
      // together (a window's rows and columns can share sets that neither
      // crowds alone).
      const int64_t lines = tile_lines_per_set(s, an, x, l1.line_bytes, way);
      est.penalty_s += steps * crowded_step_cycles(cpu, lines) / freq;
      // Along a reduction axis the same happens over the micro-kernel's
      // reduction loop: R steps read lines a stride apart; when they crowd
      // a set, every step's lines come from L2 again. Steps a window slides
      // over share lines, counted once; other steps' lines are their own,
      // stacked in the same sets every way_bytes / gcd(stride, way) steps.
      // Each step's lines are a run of their own, a line or more apart from
      // the last step's, which no prefetcher follows: they come at the
      // demand rate of runs that long, while the micro-kernel computes: they
      // are L1's traffic, overlapped with the FMAs like the rest of it
      // (measured: matmul 37x4096xK reading B in place, 2 lines a step 16 KB
      // apart for 28 FMAs, ran 1.23-1.25x faster than the model's pick that
      // packed B, when these refills were charged as time of their own).
      // A tile a later call reads again needs a way to spare (measured:
      // 2048x768x768 GEMMs whose B panel filled its sets to the last way
      // took 1.35x the time the model gave them; see widen_to_reread). Each refilled line also
      // costs what the host measured a line of a thrashed set to cost
      // beyond the overlap (measured, this Zen 4 core restricted to AVX2:
      // GEMM 1024^3's pick read B's rows 4 KiB apart in place, 6 rows by 16
      // columns, and ran 1.7x the time of the pick this finds, 35.8 ms
      // against 20.8; at 512 bits the charge is a fifth as large). Steps
      // whose lines no later step or call reads (no window slides over
      // them; the next call moves the tile) lose nothing to crowding when
      // the access comes from L2, where the blocks' traffic has their lines
      // (measured: depthwise 14x14 c512 3x3/2, a tile of 7 columns x 32
      // channels whose kh rows crowd one set ran 1.4x faster than the pick
      // the charge put above it); from farther out their demand misses stay
      // charged (GEMVs reading B's rows in place: picks up to 1.4x slower
      // without). A step's lines are those it touches (a strided window's,
      // not its span), charged once however many reduction axes crowd.
      Small<int64_t> call(t.begin(), t.end());  // a call's block: its steps along the reduction axes
      for (int a = an.num_spatial; a < n; ++a) call[a] = reg > 1 ? s.tile[reg - 1][a] : full[a];
      Small<int64_t> reread(call.begin(), call.end());
      const int kept = widen_to_reread(s, trip, x, reread, full, usable_capacity(l1)) ? 1 : 0;
      const bool in_l2 = cpu.caches.size() > 1 && 4 * x.data_tile(full.data()) <= usable_capacity(cpu.caches[1]);
      const double step_lines = std::ceil(x.touched_tile(t.data()) * 4 / double(l1.line_bytes));
      const double step_run = std::min(step_lines * double(l1.line_bytes), x.run_elems(t.data()) * 4);
      bool crowded = false;
      int64_t stream_sets = 0;  // the sets a stream of new lines, one run a step, cycles through; 0: a sliding window
      for (int a = an.num_spatial; a < n && !crowded; ++a) {
        const int64_t R = kept ? reread[a] : call[a];
        if (a == s.vec_axis || R <= 1 || !x.uses_axis[a] || !x.stride[a]) continue;
        const int64_t bytes = std::abs(*x.stride[a]) * 4;
        if (bytes < l1.line_bytes) continue;  // the steps share lines
        bool slides = false;
        for (int b = 0; b < an.num_spatial; ++b) slides |= t[b] > 1 && x.slides_with(b, a);
        if (!slides && !kept && in_l2) continue;
        const int64_t sets = std::max<int64_t>(1, way / std::gcd(bytes % way == 0 ? way : bytes % way, way));
        int64_t crowd = 0;
        if (slides) {
          crowd = tile_lines_per_set(s, an, x, l1.line_bytes, way, a, call[a]);
        } else {
          // A reread tile stacks its steps' lines, all its calls', in the sets.
          const int64_t step = kept ? tile_lines_per_set(s, an, x, l1.line_bytes, way, -1, 1, reread.data()) : lines;
          // A reread tile's lines must all stay: where the rows' stride is
          // near a multiple of the way they drift through a few sets, which
          // the offsets modulo the way, taken as spread evenly, miss (rows
          // 4084 bytes apart start 12 bytes lower each, about five a set of a
          // 4 KiB way; matmul 5x1021x1021: a pick of 2-row tiles re-read B's
          // 128-row blocks from L2, 0.37 ms against 0.18), so the lines the R
          // rows' runs span are counted. (Counted for a stream read once too,
          // they moved GEMM picks 0.84x; lines_per_set gives 0 past 4096.)
          const int64_t run_lines = std::max<int64_t>(1, int64_t(std::ceil(step_run / double(l1.line_bytes))));
          const int64_t rows_lines =
              kept ? remembered_lines_per_set({l1.line_bytes, way, R, *x.stride[a], run_lines, l1.line_bytes / 4}) : 0;
          crowd = std::max((R + sets - 1) / sets, rows_lines) * std::max<int64_t>(1, step);
          stream_sets = sets;
        }
        crowded = crowd + kept > l1.associativity;
      }
      if (crowded) {
        est.level_s[0] += steps * step_lines * double(l1.line_bytes) / demand_bandwidth(cpu, 1, step_run, true);
        est.penalty_s += steps * step_lines * thrashed_line_s;
        const double pass_bytes = 4 * x.data_tile(call.data());
        est.penalty_s +=
            stream_wait_cycles(s, an, cpu, t, rate, x, hints[i], stream_sets, pass_bytes, full, peels) / freq;
      }
    }
  }

  // Accumulators are loaded from and stored to the output once per
  // reduction block; along a vector axis the output is not contiguous on,
  // that is a gather and a scatter per element.
  if (s.vec_axis >= 0 && s.vec_axis < an.num_spatial && s.vec_axis != an.num_spatial - 1)
    est.penalty_s += spatial_points * reduce_blocks * 4.0 / freq;

  // --- parallelism ---
  est.balance = parallel_balance(s, an, trip, threads);
  // Compute and traffic overlap, but not perfectly: a soft maximum (the
  // 6-norm) sits 12% above the larger of two equals, and adds almost
  // nothing for traffic well below compute (hidden by prefetching).
  auto sixth_power = [](double x) { return (x * x) * (x * x) * (x * x); };
  double core = sixth_power(est.compute_s);
  double stall = 0;
  for (int i = 0; i < est.caches; ++i) {
    core += sixth_power(est.level_s[i] - est.stall_s[i]);
    stall += est.stall_s[i];
  }
  core = std::pow(core, 1.0 / 6);
  est.seconds = (core + stall + est.pack_s + est.penalty_s) / (threads * est.balance);
  // Handing chunks to other threads and waiting for them costs the
  // wake-up and the join: work smaller than a few times that stays on the
  // calling thread (one parallel trip runs inline).
  constexpr double kParallelLaunchSeconds = 5e-6;
  if (outer_trips > 1 && threads > 1) est.seconds += kParallelLaunchSeconds;
  return est;
}

// The anchor analysis with the producers state `s` materializes read from
// buffers laid out as lowering lays them out (schedule_with_state), their
// rows perhaps padded; `an` itself where none is. The copy is kept for the
// next state of the same anchor (per thread): a traversal weighs thousands,
// and copying the analysis for each took a third of construction's time.
const AnchorInfo& laid_out(const AnchorInfo& an, const StateData& s, const CpuSpec& cpu) {
  Small<int64_t> pitches(an.accesses.size(), 0);
  std::optional<CpuCaches> caches;
  bool padded = false;
  for (size_t i = 0; i < an.accesses.size(); ++i) {
    if (!s.materialized(i)) continue;
    if (!caches) caches = cpu_caches_of(cpu);
    pitches[i] = materialized_row_pitch(an.accesses[i], *caches);
    padded |= pitches[i] != 0;
  }
  if (!padded) return an;
  // The copy holds the stage's tensor, so another analysis of the same
  // stage at this address is of the same operator (and planned alike).
  struct Memo {
    const AnchorInfo* source = nullptr;
    Small<int64_t> pitches;
    std::optional<AnchorInfo> copy;
  };
  thread_local Memo memo;
  if (memo.source != &an || memo.pitches != pitches || memo.copy->stage.get() != an.stage.get() ||
      memo.copy->planned != an.planned) {
    memo.source = &an;
    memo.pitches = pitches;
    memo.copy = an;
    for (size_t i = 0; i < an.accesses.size(); ++i)
      if (pitches[i] != 0) memo.copy->accesses[i] = with_row_pitch(an.accesses[i], pitches[i]);
  }
  return *memo.copy;
}

}  // namespace

Estimate estimate(const AnchorInfo& an, const StateData& s, const HwSpec& hw, int threads) {
  if (hw.kind == TargetKind::Gpu) return estimate_gpu(an, s, hw);
  return estimate_cpu(laid_out(an, s, hw.cpu), s, hw, threads);
}

}  // namespace loom
