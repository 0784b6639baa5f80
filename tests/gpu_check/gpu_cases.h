// Operator cases for the GPU checks: every operator of `loom ops`, at
// awkward sizes (1, primes, extents no tile divides), and a few whole ones.
#pragma once

#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "construct/construct.h"
#include "construct/roller.h"
#include "driver/compile_schedule.h"
#include "random_states.h"
#include "schedule/schedule.h"
#include "schedule/task.h"
#include "test_util.h"

namespace loom::test {

inline std::vector<OpCase> gpu_cases() {
  return {
      {"matmul", {{"M", "37"}, {"N", "45"}, {"K", "29"}}},
      {"matmul", {{"M", "1"}, {"N", "67"}, {"K", "13"}}},
      {"matmul", {{"M", "64"}, {"N", "64"}, {"K", "32"}}},  // whole tiles: vector loads
      {"batch_matmul", {{"B", "3"}, {"M", "13"}, {"N", "33"}, {"K", "17"}}},
      {"dense", {{"M", "9"}, {"N", "35"}, {"K", "24"}, {"epilogue", "bias_gelu"}}},
      {"dense", {{"M", "1"}, {"N", "31"}, {"K", "7"}, {"epilogue", "bias_relu"}}},
      {"conv2d",
       {{"N", "1"}, {"H", "9"}, {"W", "10"}, {"CI", "5"}, {"CO", "19"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}},
      {"conv2d", {{"N", "2"}, {"H", "8"}, {"W", "7"}, {"CI", "6"}, {"CO", "8"}, {"KH", "3"}, {"KW", "2"},
                  {"stride", "2"}, {"pad", "1"}, {"dilation", "2"}, {"groups", "2"}, {"layout", "NCHW"}}},
      {"conv2d", {{"N", "1"}, {"H", "8"}, {"W", "8"}, {"CI", "8"}, {"CO", "16"}, {"KH", "1"}, {"KW", "1"}}},
      {"conv2d", {{"N", "1"}, {"H", "6"}, {"W", "7"}, {"CI", "3"}, {"CO", "18"}, {"KH", "3"}, {"KW", "3"},
                  {"stride", "2"}, {"pad", "1"}, {"epilogue", "bn_relu"}}},
      {"depthwise_conv2d", {{"N", "1"}, {"H", "11"}, {"W", "9"}, {"C", "21"}, {"KH", "5"}, {"KW", "5"}, {"stride", "2"},
                            {"pad", "2"}}},
      {"conv2d_transpose", {{"N", "1"}, {"H", "4"}, {"W", "5"}, {"CI", "6"}, {"CO", "7"}, {"KH", "4"}, {"KW", "4"},
                            {"stride", "2"}, {"pad", "1"}}},
      {"pool2d", {{"N", "1"}, {"H", "12"}, {"W", "11"}, {"C", "18"}, {"KH", "3"}, {"KW", "3"}, {"stride", "2"},
                  {"pad", "1"}}},
      {"pool2d", {{"N", "1"}, {"H", "8"}, {"W", "8"}, {"C", "5"}, {"KH", "2"}, {"KW", "2"}, {"stride", "2"},
                  {"kind", "avg"}}},
      {"softmax", {{"M", "7"}, {"N", "45"}}},
      {"layernorm", {{"M", "6"}, {"N", "70"}}},
      {"reduce", {{"M", "5"}, {"N", "77"}}},
      {"reduce", {{"M", "4"}, {"N", "50"}, {"kind", "max"}}},
      {"gelu", {{"M", "5"}, {"N", "37"}}},
      {"bias_add_relu", {{"M", "7"}, {"N", "19"}}},
      {"bias_add_gelu", {{"M", "3"}, {"N", "11"}}},
      {"channel_affine_relu", {{"N", "1"}, {"H", "3"}, {"W", "5"}, {"C", "7"}}},
  };
}

// The states both GPU tiers run, each named by where it came from: construction's top 3, Roller's top 1 and
// `random` random legal states (walks of growing length, seeded by the case's name).
inline std::vector<std::pair<std::string, State>> gpu_test_states(const Task& task, const HwSpec& hw,
                                                                  const std::string& case_name, int random) {
  std::vector<std::pair<std::string, State>> states;
  for (const RankedState& r : construct_states(task, 3, {})) states.emplace_back("construct", r.state);
  for (const State& s : roller_states(*task.anchor, hw, 1, 1)) states.emplace_back("roller", s);
  std::mt19937_64 rng(std::hash<std::string>()(case_name));
  for (int i = 0; i < random; ++i) states.emplace_back("random", random_state(*task.anchor, hw, rng, 6 + 3 * i));
  return states;
}

// Compiles `state`, runs it on `inputs` and compares with the reference executor. A failure names the state
// (and `from`, where it came from) and shows the kernel's source, its OpenCL twin when `opencl`. Returns where
// the kernel ran; empty when the run threw (a fault: on CUDA the context is then unusable).
inline std::string expect_state_matches(const Operator& op, const Task& task, const HwSpec& hw, const std::string& from,
                                        const State& state, const std::vector<Buffer>& inputs, bool opencl,
                                        int64_t max_points = 1 << 16) {
  Kernel k = compile_schedule(op, schedule_with_state(task, state), hw, 1);
  const std::string label = from + " state " + state->str() + " on " + hw.name;
  try {
    CheckResult r = run_and_check(op, k, inputs, max_points);
    EXPECT_TRUE(r.ok) << label << ": max_rel_err " << r.max_rel_err << "\n" << k.source(opencl);
    return k.executed_on();
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": " << e.what() << "\n" << k.source(opencl);
    return "";
  }
}

// LOOM_REQUIRE_OPENCL=1 / LOOM_REQUIRE_NVRTC=1 (set by tests/CMakeLists.txt where the build found them): a
// missing runtime fails instead of skipping.
inline bool required(const char* variable) {
  const char* v = std::getenv(variable);
  return v && std::string(v) == "1";
}

}  // namespace loom::test
