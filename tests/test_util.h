// Helpers shared by the test tiers.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "loom/loom.h"

namespace loom::test {

// Runs `k` on `inputs` into fresh outputs and compares up to max_points
// elements per output with the reference executor. The outputs start as all
// ones bits (NaN in floating point): an element the kernel leaves unwritten fails.
inline CheckResult run_and_check(const Operator& op, const Kernel& k, const std::vector<Buffer>& inputs,
                                 int64_t max_points = 1 << 16) {
  std::vector<Buffer> out = allocate_outputs(op, inputs);
  for (const Buffer& b : out) std::memset(b.data(), 0xff, size_t(b.numel()) * b.dtype().bytes());
  k.run(inputs, out);
  CheckOptions co;
  co.max_points = max_points;
  return check_against_reference(op, inputs, out, co);
}

// Compiles `op`, runs it on random inputs and compares every output element
// (up to max_points per output) with the reference executor.
inline CheckResult compile_and_check(const Operator& op, const CompileOptions& options = {},
                                     const std::vector<int64_t>& sizes = {}, uint64_t seed = 7) {
  return run_and_check(op, compile(op, options), random_inputs(op, seed, sizes));
}

// An operator by name and parameters, for parameterised tests.
struct OpCase {
  std::string op;
  std::map<std::string, std::string> params;
};

// A test-name-safe label: op_param1value1_...
inline std::string case_name(const OpCase& c) {
  std::string s = c.op;
  for (const auto& [k, v] : c.params) s += "_" + k + v;
  return s;
}

// Asserts that `stmt` throws UserError whose message contains `needle`.
#define EXPECT_USER_ERROR(stmt, needle)                                                      \
  do {                                                                                       \
    try {                                                                                    \
      stmt;                                                                                  \
      ADD_FAILURE() << "expected a UserError mentioning '" << (needle) << "'";               \
    } catch (const ::loom::UserError& e) {                                                   \
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)                       \
          << "message was: " << e.what();                                                    \
    }                                                                                        \
  } while (0)

}  // namespace loom::test
