#include "search/features.h"

#include <algorithm>
#include <cmath>

#include "construct/analytic_model.h"
#include "loom/error.h"

namespace loom {

namespace {

constexpr int kMaxLevels = 5;
constexpr int kMaxAxes = 8;

float lg(double x) { return float(std::log2(1.0 + std::max(0.0, x))); }

class FeatureWriter {
 public:
  explicit FeatureWriter(std::vector<float>& out) : out_(out) {}
  void add(double x) { out_.push_back(lg(x)); }
  void raw(double x) { out_.push_back(float(x)); }

 private:
  std::vector<float>& out_;
};

// Trip count of level l's loops over one tile of level l-1 (level 0: over
// the whole extent).
double trips(const AnchorInfo& anchor, const StateData& s, int l, int a) {
  double outer = l == 0 ? double(anchor.plan_extent(a)) : double(s.tile[l - 1][a]);
  return std::ceil(outer / double(s.tile[l][a]));
}

void write_features(const Task& task, const StateData& s, FeatureWriter& w) {
  const AnchorInfo& anchor = *task.anchor;
  const Estimate e = estimate(anchor, s, task.target, task.threads);
  // The analytic model's view.
  w.add(e.seconds * 1e9);
  w.add(e.compute_s * 1e9);
  for (int c = 0; c < 4; ++c) w.add(e.level_s[c] * 1e9);
  w.add(e.pack_s * 1e9);
  w.add(e.penalty_s * 1e9);
  w.raw(e.balance);
  w.raw(e.vector_util);
  w.raw(e.ilp);
  // Loop structure.
  const double flops = task.flops();
  w.add(flops);
  w.raw(anchor.num_axes());
  w.raw(task.threads);
  w.add(s.vec_width);
  w.add(s.unroll);
  w.raw(s.fuse ? 1 : 0);
  w.raw(s.vec_axis < 0 ? -1 : s.vec_axis < s.num_spatial ? 0 : 1);  // vector axis spatial or reduction
  double accumulators = 1;
  for (int a = 0; a < s.num_spatial; ++a) accumulators *= double(s.tile[s.reg_level()][a]);
  w.add(accumulators / std::max(1, s.vec_width));
  double parallel_tiles = 1;
  for (int a = 0; a < s.num_spatial; ++a) parallel_tiles *= trips(anchor, s, 0, a);
  w.add(parallel_tiles);
  for (int l = 0; l < kMaxLevels; ++l) {
    // Level l counted from the register level inwards-out, so that specs
    // with different numbers of cache levels line up at the inner levels.
    const int level = s.reg_level() - l;
    double spatial = 1, reduce = 1, trip = 1;
    for (int a = 0; level >= 0 && a < s.num_axes; ++a) {
      (anchor.is_reduce_axis(a) ? reduce : spatial) *= double(s.tile[level][a]);
      trip *= trips(anchor, s, level, a);
    }
    w.add(level >= 0 ? spatial : 0);
    w.add(level >= 0 ? reduce : 0);
    w.add(level >= 0 ? trip : 0);
    for (int a = 0; a < kMaxAxes; ++a) w.add(level >= 0 && a < s.num_axes ? double(s.tile[level][a]) : 0);
    // Per buffer: unique bytes of its data tile at this level, and the
    // level's arithmetic intensity over all of them.
    double bytes = 0, tile_flops = 2;
    for (int a = 0; level >= 0 && a < s.num_axes; ++a) tile_flops *= double(s.tile[level][a]);
    for (int i = 0; i < kMaxAccesses; ++i) {
      double b = level >= 0 && i < int(anchor.accesses.size()) ? 4 * anchor.accesses[i].data_tile(s.tile[level]) : 0;
      bytes += b;
      w.add(b);
    }
    w.add(level >= 0 ? tile_flops / std::max(1.0, bytes) : 0);
  }
  // Per buffer: layout and staging.
  for (int i = 0; i < kMaxAccesses; ++i) {
    const bool present = i < int(anchor.accesses.size());
    const Access* acc = present ? &anchor.accesses[i] : nullptr;
    int64_t stride = 0;
    if (acc && s.vec_axis >= 0 && acc->stride[s.vec_axis]) stride = std::llabs(*acc->stride[s.vec_axis]);
    double reuse = 1;  // register-level trips of axes the access does not use
    for (int a = 0; acc && a < s.num_axes; ++a)
      if (!acc->uses_axis[a]) reuse *= double(s.tile[s.reg_level()][a]);
    w.raw(present ? 1 : 0);
    w.add(double(stride));
    w.add(reuse);
    w.raw(acc && s.reads_through_guard(anchor, size_t(i)) ? 1 : 0);
    w.raw(present && s.pack[i] >= 0 ? 1 : 0);
    w.raw(present && s.pack[i] >= 0 ? s.reg_level() - s.pack_level(s.pack[i]) : 0);
  }
}

}  // namespace

std::vector<float> state_features(const Task& task, const StateData& state) {
  std::vector<float> out;
  out.reserve(size_t(feature_count()));
  FeatureWriter w(out);
  write_features(task, state, w);
  LOOM_INTERNAL_CHECK(int(out.size()) == feature_count(), "feature vector has ", out.size(), " entries");
  return out;
}

int feature_count() { return 11 + 9 + kMaxLevels * (3 + kMaxAxes + kMaxAccesses + 1) + kMaxAccesses * 6; }

}  // namespace loom
