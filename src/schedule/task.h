// A tuning task: one operator on one target, the unit schedules are chosen for.
//
// Everything strategies, lowering and measurement need to know about the
// operator is computed once here: the anchor analysis (shared by every
// candidate schedule), the sizes symbolic dimensions are planned and measured
// at, and a workload key that names the operator in records ("dense
// K=768 M=128 N=3072 epilogue=bias float32"). A task's weight is how often it
// occurs in a model (the task scheduler's w_i).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/hwspec.h"
#include "loom/operator.h"
#include "schedule/anchor.h"

namespace loom {

struct Task {
  Operator op;  // as declared: its buffers, its reference results, its records
  // What states describe and schedules lower: op in its fewest axes
  // (collapse_axes.h), over the same buffers; op itself when nothing merges.
  std::shared_ptr<const Operator> scheduled;
  std::shared_ptr<const AnchorInfo> anchor;  // of `scheduled`
  HwSpec target;
  int threads = 1;                  // resolved: never 0
  std::vector<int64_t> plan_sizes;  // per op.size_vars: the sizes measured at
  std::string workload_key;
  double weight = 1;

  // Useful floating-point operations at the planning sizes.
  double flops() const;
};

// Builds the task; threads 0 means one per core of `target`. Symbolic sizes
// are planned at `plan_sizes` (op.size_vars order) when given: the
// dynamic-shape runtime constructs one kernel per bucket of sizes this way.
Task make_task(const Operator& op, const HwSpec& target, int threads, double weight = 1,
               const std::vector<int64_t>& plan_sizes = {});

// "name k1=v1 k2=v2 ... float32": the operator's identity in records.
std::string workload_key(const Operator& op);

}  // namespace loom
