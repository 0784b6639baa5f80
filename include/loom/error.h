// Errors thrown by loom's public API.
//
// Two tiers, as in Halide: a UserError means the caller asked for something
// invalid (unknown operator, bad size, shapes that do not compose, malformed
// hwspec YAML, a buffer of the wrong shape). Its message names the bad value
// and says what was expected. An InternalError means loom broke one of its
// own invariants: it is always a bug in loom, never in the caller's input.
// Search code treats an illegal schedule step as an expected, cheap failure
// value, not as an exception of either kind.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace loom {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The caller's input is invalid. The CLI maps this to exit code 2.
class UserError : public Error {
 public:
  using Error::Error;
};

// loom's own invariant failed: report it as a bug.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& what)
      : Error("internal error (a loom bug): " + what) {}
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

// Messages are only built when the check fails.
#define LOOM_USER_CHECK(cond, ...) \
  do {                             \
    if (!(cond)) throw ::loom::UserError(::loom::detail::concat(__VA_ARGS__)); \
  } while (0)

#define LOOM_INTERNAL_CHECK(cond, ...)                                         \
  do {                                                                         \
    if (!(cond))                                                               \
      throw ::loom::InternalError(::loom::detail::concat(                      \
          __FILE__, ":", __LINE__, ": ", #cond, ": ", __VA_ARGS__));           \
  } while (0)

}  // namespace loom
