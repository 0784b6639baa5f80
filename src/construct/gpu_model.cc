#include "construct/gpu_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "schedule/gpu_tiles.h"
#include "schedule/step.h"

namespace loom {

namespace {

constexpr double kLaunchSeconds = 3e-6;
constexpr double kWarpInstructionsInFlight = 32;
constexpr double kSectorElements = 8;  // 32-byte sectors of 4-byte elements

// The spatial axis neighbouring threads differ in (the fastest thread axis), or -1.
int fastest_thread_axis(const StateData& s, const AnchorInfo& an, const GpuTiles& g) {
  int fastest = -1;
  for (int a : s.order[s.reg_level()])
    if (!an.is_reduce_axis(a) && g.threads_along[a] > 1) fastest = a;
  return fastest;
}

// The access's innermost used axis' stride in memory (the direction the staged copy walks).
int64_t contiguous_run_stride(const Access& x, const std::vector<int>& axes) {
  if (axes.empty()) return 1;
  const auto& st = x.stride[size_t(axes.back())];
  return st ? std::max<int64_t>(1, std::llabs(*st)) : int64_t(kSectorElements);
}

}  // namespace

Estimate estimate_gpu(const AnchorInfo& an, const StateData& s, const HwSpec& hw) {
  const GpuSpec& gpu = hw.gpu;
  const GpuTiles g = GpuTiles::of(s, an);
  Estimate est;
  est.caches = 3;
  const int n = s.num_axes;
  double blocks = 1, points = 1, reduce_points = 1;
  for (int a = 0; a < n; ++a) {
    const double e = double(an.plan_extent(a));
    points *= e;
    if (an.is_reduce_axis(a)) reduce_points *= e;
    else blocks *= std::ceil(e / double(g.block[a]));
  }
  const double flops = (an.is_reduction ? 2.0 : 1.0) * points;

  // Occupancy and waves.
  const int64_t warps = (g.threads + gpu.warp_size - 1) / gpu.warp_size;
  const int64_t regs = gpu_register_estimate(s, an);
  const int64_t smem = g.shared_bytes(s, an, gpu.shared_memory_banks);
  int64_t per_sm = std::min<int64_t>(gpu.max_blocks_per_sm, gpu.max_threads_per_sm / (warps * gpu.warp_size));
  per_sm = std::min<int64_t>(per_sm, gpu.registers_per_sm / std::max<int64_t>(1, regs * warps * gpu.warp_size));
  if (smem > 0) per_sm = std::min<int64_t>(per_sm, gpu.shared_memory_per_sm / smem);
  if (per_sm < 1) {
    est.seconds = est.compute_s = 1e3;  // cannot run: ranked last
    return est;
  }
  const double slots = double(gpu.sms) * double(per_sm);
  const double waves = std::ceil(blocks / slots);
  est.balance = blocks / (waves * slots);

  // Operand loads per reduction position per thread, and where they come from.
  const int fast = fastest_thread_axis(s, an, g);
  double loads = 0, shared_words = 0, global_words = 0;
  for (int i = 0; i < int(an.accesses.size()); ++i) {
    const Access& x = an.accesses[size_t(i)];
    double per_thread = 1;
    for (int a = 0; a < an.num_spatial; ++a)
      if (x.uses_axis[size_t(a)]) per_thread *= double(g.vthreads[a] * g.thread_tile[a]);
    loads += per_thread;
    const bool staged = s.pack[size_t(i)] >= 0;
    const std::vector<int> axes = g.staged_axes(an, i);
    if (staged) {
      // Bank conflicts among a warp's neighbouring threads.
      double degree = 1;
      if (fast >= 0 && x.uses_axis[size_t(fast)]) {
        const std::vector<int64_t> layout = g.staged_layout(an, i, gpu.shared_memory_banks);
        int64_t stride = g.thread_tile[fast];
        for (size_t d = axes.size(); d-- > 0 && axes[d] != fast;) stride *= layout[d];
        degree = double(std::min<int64_t>(std::gcd(stride, int64_t(gpu.shared_memory_banks)), gpu.warp_size));
      }
      shared_words += per_thread * degree * double(g.threads) * blocks * reduce_points;
      // The block's tile, once per step: the data tile of (block, step), times the steps.
      std::vector<int64_t> tile(static_cast<size_t>(n), 1);
      double steps = 1;
      for (int a = 0; a < n; ++a) {
        tile[size_t(a)] = an.is_reduce_axis(a) ? g.step[a] : g.block[a];
        if (an.is_reduce_axis(a)) steps *= std::ceil(double(an.plan_extent(a)) / double(g.step[a]));
      }
      const double sector = std::min<double>(kSectorElements, double(contiguous_run_stride(x, axes)));
      global_words += x.data_tile(tile.data()) * steps * blocks * sector;
    } else {
      std::vector<int64_t> tile(size_t(n), 1);
      for (int a = 0; a < an.num_spatial; ++a) tile[size_t(a)] = g.vthreads[a] * g.thread_tile[a];
      const bool coalesced = fast < 0 || !x.uses_axis[size_t(fast)] || (x.stride[size_t(fast)] &&
                                                                         std::llabs(*x.stride[size_t(fast)]) == 1);
      const double sector = coalesced ? 1 : kSectorElements;
      global_words += x.data_tile(tile.data()) * reduce_points * double(g.threads) * blocks * sector;
    }
  }
  global_words += points / reduce_points;  // outputs written once

  const double clock = gpu.clock_ghz * 1e9;
  const double active_warps = double(per_sm * warps);
  const double ilp = an.is_reduction ? double(std::min<int64_t>(g.per_thread, 8)) : 1.0;
  est.ilp = std::min(1.0, active_warps * ilp / kWarpInstructionsInFlight);
  const double fmas = an.is_reduction ? double(g.per_thread) : 1.0;
  const double issue = fmas / (fmas + loads);
  est.vector_util = issue;
  // Lanes of the block's last warp beyond its threads idle.
  const double lanes = double(g.threads) / double(warps * gpu.warp_size);
  const double peak = gpu.peak_fp32_tflops * 1e12;
  est.compute_s = flops / (peak * est.balance * est.ilp * issue * lanes);
  const double smem_bw = double(gpu.shared_memory_banks) * 4.0 * clock * double(gpu.sms);
  est.level_s[0] = shared_words * 4.0 / (smem_bw * est.balance * lanes);
  const double dram_bw = gpu.dram_bandwidth_gbs * 1e9;
  const double l2_bw = gpu.l2_bandwidth_gbs > 0 ? gpu.l2_bandwidth_gbs * 1e9 : 3 * dram_bw;
  est.level_s[1] = global_words * 4.0 / l2_bw;
  double unique_bytes = 4.0 * points / reduce_points;
  for (const Access& x : an.accesses) {
    double elems = 1;
    for (const Expr& d : x.tensor.shape()) elems *= double(d.as_const_int().value_or(AnchorInfo::kDefaultPlanExtent));
    unique_bytes += 4.0 * elems;
  }
  const double dram_bytes = unique_bytes <= double(gpu.l2_bytes) ? unique_bytes : global_words * 4.0;
  est.level_s[2] = dram_bytes / dram_bw;
  est.penalty_s = kLaunchSeconds;
  double sum6 = std::pow(est.compute_s, 6);
  for (int k = 0; k < 3; ++k) sum6 += std::pow(est.level_s[size_t(k)], 6);
  est.seconds = std::pow(sum6, 1.0 / 6) + est.penalty_s;
  return est;
}

}  // namespace loom
