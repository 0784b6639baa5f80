// Operator cases for the GPU checks: every operator of `loom ops`, at
// awkward sizes (1, primes, extents no tile divides), and a few whole ones.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

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

// LOOM_REQUIRE_OPENCL=1 / LOOM_REQUIRE_NVRTC=1 (set by tests/CMakeLists.txt where the build found them): a
// missing runtime fails instead of skipping.
inline bool required(const char* variable) {
  const char* v = std::getenv(variable);
  return v && std::string(v) == "1";
}

}  // namespace loom::test
