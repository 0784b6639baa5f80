#include "schedule/gpu_tiles.h"

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "schedule/anchor.h"
#include "schedule/state.h"

namespace loom {

GpuTiles GpuTiles::of(const StateData& s, const AnchorInfo& anchor) {
  GpuTiles g;
  const int n = s.num_axes;
  g.block.assign(n, 1);
  g.vthreads.assign(n, 1);
  g.threads_along.assign(n, 1);
  g.thread_tile.assign(n, 1);
  g.step.assign(n, 1);
  for (int a = 0; a < n; ++a) {
    if (anchor.is_reduce_axis(a)) {
      g.step[a] = s.tile[1][a];
      continue;
    }
    g.block[a] = s.tile[0][a];
    g.vthreads[a] = s.tile[0][a] / s.tile[1][a];
    g.threads_along[a] = s.tile[1][a] / s.tile[2][a];
    g.thread_tile[a] = s.tile[2][a];
    g.threads *= g.threads_along[a];
    g.per_thread *= g.vthreads[a] * g.thread_tile[a];
  }
  return g;
}

std::vector<int> GpuTiles::staged_axes(const AnchorInfo& anchor, int i) const {
  const Access& x = anchor.accesses[size_t(i)];
  std::vector<int> axes;
  for (int a = 0; a < anchor.num_axes(); ++a)
    if (x.uses_axis[size_t(a)]) axes.push_back(a);
  // In the tensor's memory order (largest stride first): the copy walks memory contiguously.
  auto stride = [&](int a) { return x.stride[size_t(a)] ? std::llabs(*x.stride[size_t(a)]) : INT64_MAX; };
  std::stable_sort(axes.begin(), axes.end(), [&](int a, int b) { return stride(a) > stride(b); });
  return axes;
}

std::vector<int64_t> GpuTiles::staged_extents(const AnchorInfo& anchor, int i) const {
  std::vector<int64_t> extents;
  for (int a : staged_axes(anchor, i)) extents.push_back(anchor.is_reduce_axis(a) ? step[a] : block[a]);
  return extents;
}

std::vector<int64_t> GpuTiles::staged_layout(const AnchorInfo& anchor, int i, int banks) const {
  std::vector<int64_t> layout = staged_extents(anchor, i);
  if (layout.size() > 1 && banks > 0 && layout.back() % banks == 0) layout.back() += 1;
  return layout;
}

int64_t GpuTiles::shared_bytes(const StateData& s, const AnchorInfo& anchor, int banks) const {
  int64_t bytes = 0;
  for (int i = 0; i < int(s.pack.size()); ++i) {
    if (s.pack[size_t(i)] < 0) continue;
    int64_t elems = 1;
    for (int64_t e : staged_layout(anchor, i, banks)) elems *= e;
    bytes += elems * 4;
  }
  return bytes;
}

}  // namespace loom
