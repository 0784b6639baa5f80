// Checked size arithmetic: every product or sum of sizes that comes from
// user input (shapes, buffer bytes, footprints, address ranges) goes through
// these, so an overflow is a UserError naming what was computed, never a
// wrapped value that allocates a tiny buffer and writes past it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/error.h"

namespace loom {

// The result, or nothing when it overflows: for analyses where an
// overflow means "unknown" rather than an error.
inline std::optional<int64_t> add_or_none(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
}
inline std::optional<int64_t> sub_or_none(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
}
inline std::optional<int64_t> mul_or_none(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
}

inline int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  const std::optional<int64_t> r = mul_or_none(a, b);
  LOOM_USER_CHECK(r.has_value(), what, " overflows 64 bits (", a, " x ", b, ")");
  return *r;
}

inline int64_t checked_add(int64_t a, int64_t b, const std::string& what) {
  const std::optional<int64_t> r = add_or_none(a, b);
  LOOM_USER_CHECK(r.has_value(), what, " overflows 64 bits (", a, " + ", b, ")");
  return *r;
}

// The product of non-negative dimensions.
inline int64_t checked_product(const std::vector<int64_t>& dims, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    LOOM_USER_CHECK(d >= 0, what, ": dimension ", d, " is negative");
    n = checked_mul(n, d, what);
  }
  return n;
}

}  // namespace loom
