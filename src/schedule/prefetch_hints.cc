#include "schedule/prefetch_hints.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "schedule/anchor.h"

namespace loom {

namespace {

// The reduction runs at least this many steps per row the hints reach
// ahead: at most a fraction of them ask for lines past its end (a window's
// 3 taps are no stream).
constexpr int64_t kPrefetchTripsPerRow = 4;

// About twice the latency of a miss to memory on current servers: the
// lines asked of L2 arrive before the steps that read them even when the
// memory system is queued up.
constexpr double kL2HintLeadNs = 200;

// Whether a step's run of `run` f32 elements is more than L2 delivers in
// the time of the step's vector FMAs: such a micro-kernel waits on L2 on
// every pass over the operand, and is hinted on every one (17x4099x331
// with 2x160 tiles, B's rows 16 KiB apart, 9 passes: 0.76 ms with hints on
// the first pass only, 0.58 with them on all).
bool reads_faster_than_l2(int64_t run, int64_t step_fmas, const CpuCaches& caches) {
  return caches.l2_bytes_per_fma > 0 && double(run) * 4 > double(step_fmas) * caches.l2_bytes_per_fma;
}

// How many reduction steps ahead the first pass asks L2 for an operand's
// lines: the steps the micro-kernel computes in kL2HintLeadNs, which L1's
// few rows ahead (prefetch_rows) do not cover when the lines come from
// beyond L2 (matmul 37x1000x4096, 8x48 tiles: 3.24 ms with hints into L1
// 8 rows ahead alone; 3.15, 3.03, 3.09, 3.00 with hints into L2 alone, 16,
// 32, 64, 128 rows ahead; 2.82 with both, L2's 32 rows ahead; 37x771x4096:
// 2.22 ms with L1's alone, 2.17 with both). Only for runs shorter than
// prefetchers need to follow them (kPrefetchLeadBytes): a GEMV's 13-line
// runs are followed, and L2's hints cost it 5% (matmul 1x771x771). 0: none.
int64_t l2_rows(int64_t run, int64_t step_fmas, const CpuCaches& caches) {
  if (4.0 * double(run) >= kPrefetchLeadBytes) return 0;
  const double steps_per_ns = caches.vector_fmas_per_ns / double(std::max<int64_t>(1, step_fmas));
  return int64_t(std::ceil(kL2HintLeadNs * steps_per_ns));
}

}  // namespace

bool reads_vector_runs(const StateData& s, const AnchorInfo& an, const Access& x) {
  const int v = s.vec_axis;
  if (v < 0 || an.is_reduce_axis(v) || s.vec_width == 1 || !x.uses_axis[size_t(v)] || x.stride[size_t(v)] != 1)
    return false;
  const int reg = s.reg_level();
  for (int a : s.order[reg])
    if (a != v && x.uses_axis[size_t(a)] && s.tile[reg][a] > 1) return false;
  return true;
}

bool hints_next_pack_region(const StateData& s, const AnchorInfo& an, size_t access, double operand_bytes,
                            double region_elems, int64_t l2_bytes) {
  const double l2 = double(l2_bytes);
  return l2 > 0 && !s.packs_halo(an, access) && reads_vector_runs(s, an, an.accesses[access]) &&
         operand_bytes > l2 && 4 * 4 * region_elems <= l2;
}

std::optional<int64_t> gapped_row_stride(const StateData& s, const AnchorInfo& an, const Access& x, int axis,
                                         int64_t run, int64_t line_elems) {
  if (x.guarded || !x.stride[size_t(axis)] || !reads_vector_runs(s, an, x)) return std::nullopt;
  const int64_t stride = std::abs(*x.stride[size_t(axis)]);
  if (stride < line_elems || stride <= run) return std::nullopt;
  return stride;
}

int64_t step_vector_fmas(const StateData& s, int64_t run) {
  const int reg = s.reg_level();
  int64_t vector_fmas = (run + s.vec_width - 1) / s.vec_width;
  for (int a : s.order[reg])
    if (a != s.vec_axis) vector_fmas *= s.tile[reg][a];
  return vector_fmas;
}

HintReach hint_reach(int64_t stride, int64_t run, int64_t step_fmas, int64_t trips, const CpuCaches& caches) {
  HintReach reach;
  const int64_t line = std::max(1, caches.line_bytes / 4);
  const int64_t rows = prefetch_rows(stride, run, line, caches.l1_sets, caches.l1_ways);
  if (trips < kPrefetchTripsPerRow * rows) return reach;
  reach.l1_rows = rows;
  if (const int64_t far = l2_rows(run, step_fmas, caches); far > rows && trips >= kPrefetchTripsPerRow * far)
    reach.l2_rows = far;
  reach.every_pass = reads_faster_than_l2(run, step_fmas, caches);
  return reach;
}

int64_t prefetch_rows(int64_t stride, int64_t run, int64_t line, int64_t l1_sets, int64_t l1_ways) {
  line = std::max<int64_t>(1, line);
  const int64_t sets = std::max<int64_t>(1, l1_sets);
  const int64_t per_row = (run + line - 1) / line + 1;  // a run off a line's boundary takes one more
  std::vector<int64_t> in_set(static_cast<size_t>(sets));  // reused: the cost model asks for every state it weighs
  for (int64_t rows = std::max<int64_t>(1, sets / 2 / per_row); rows > 1; --rows) {
    std::fill(in_set.begin(), in_set.end(), 0);
    int64_t crowded = 0;
    for (int64_t k = 1; k <= rows; ++k)
      for (int64_t l = k * stride / line; l <= (k * stride + run - 1) / line; ++l)
        crowded = std::max(crowded, ++in_set[size_t(l % sets)]);
    if (2 * crowded <= l1_ways) return rows;
  }
  return 1;
}

}  // namespace loom
