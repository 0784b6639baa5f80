// The reference executor: an interpreter of compute definitions, the oracle
// every generated kernel is checked against.
//
// It evaluates the tensor-expression graph directly (no schedule, no
// lowering), accumulating in double precision. Intermediate tensors are
// evaluated on demand and memoised, so checking a sample of output points of
// a large operator costs only what those points need.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/buffer.h"
#include "loom/operator.h"

namespace loom {

struct CheckResult {
  double max_rel_err = 0;  // max |got - want| / max(|want|, 1)
  int64_t points_checked = 0;
  bool ok = false;
};

struct CheckOptions {
  int64_t max_points = 4096;  // per output; all points when the output is smaller
  double tolerance = 1e-3;
  uint64_t seed = 1;
};

// Compares computed outputs against the reference on (a sample of) points.
CheckResult check_against_reference(const Operator& op, const std::vector<Buffer>& inputs,
                                    const std::vector<Buffer>& outputs,
                                    const CheckOptions& options = {});

// Fills every output element by interpretation (small problems; tests).
std::vector<Buffer> evaluate_reference(const Operator& op, const std::vector<Buffer>& inputs);

// Uniform random values in [lo, hi) for each input of `op`, shapes bound from
// `sizes` for symbolic dims (in op.size_vars order).
std::vector<Buffer> random_inputs(const Operator& op, uint64_t seed,
                                  const std::vector<int64_t>& sizes = {},
                                  double lo = -1.0, double hi = 1.0);

}  // namespace loom
