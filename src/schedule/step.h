// Schedule primitives: the edges of the state graph.
//
// A Step is a plain value (kind + small integer arguments). Every kind has
// one definition in step.cc's table: its name, its argument names and its
// legality-checked application. Applying a step never throws for an illegal
// move: it returns a StepResult holding the reason, which search and
// construction treat as an ordinary, cheap outcome.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace loom {

// The meaning of the steps, raised whenever a step's application changes:
// tuning records keep the steps, not the state, and replaying older steps
// would rebuild another state than the one measured. 2: CPU register tiles
// step by one row or vector, outer tiles following (was: divisors). 3: steps
// name the axes of the collapsed operator (collapse_axes.h), fewer where
// pixels merge. 4: a CPU reduction axis's outermost cache tiles may leave a
// partial last tile (were: divisors of the extent).
constexpr int kStepsVersion = 4;

struct StateData;
struct AnchorInfo;
struct HwSpec;
struct CpuSpec;

enum class StepKind {
  // (level, axis): next larger tile in the divisibility chain; a CPU register
  // tile grows by one row or vector, the outer tiles following it
  TileGrow,
  TileShrink,  // (level, axis): next smaller tile, likewise
  Reorder,     // (level, position): swap loops at position and position+1
  Vectorize,   // (axis, width): vector axis and width; width 1 removes it
  Unroll,      // (factor): unroll of the innermost reduction loop
  Pack,        // (access, point): pack an input at a pack point; -1 unpacks
  Fuse,        // (on): fuse the element-wise consumer into the write-back
  VThread,     // GPU (axis, factor): virtual threads along an axis
  // CPU (access, on): compute the producer an input reads through a guard
  // (a padded input) into a buffer of its own before the nest, which then
  // reads it unguarded: one pass over the input instead of a test per read
  // (or per packed element, repeated KH x KW times by a window's packing).
  Materialize,
};

struct Step {
  StepKind kind;
  int a = 0, b = 0;
  bool operator==(const Step& o) const { return kind == o.kind && a == o.a && b == o.b; }
  std::string str() const;
};

// Why a step or state is illegal. A fixed message with up to two numbers,
// formatted only when someone reads it: search discards most of these.
struct Reason {
  const char* text = nullptr;  // "{value}" and "{limit}" stand for the numbers
  int64_t value = 0, limit = 0;
  explicit operator bool() const { return text != nullptr; }
  std::string str() const;
};

struct StepResult {
  std::shared_ptr<const StateData> state;  // null when illegal
  Reason reason;                           // set when illegal
  explicit operator bool() const { return state != nullptr; }
  std::string why() const { return reason.str(); }
};

// Applies `step` to `state` and checks the result against the target.
StepResult apply_step(const StateData& state, const Step& step, const AnchorInfo& anchor, const HwSpec& target);

// Every step worth trying from `state` (legal or not). On CPUs, reorders
// that move a loop running once are left out: they rename the same program
// (a third of the states a convolution's traversal weighed).
std::vector<Step> candidate_steps(const StateData& state, const AnchorInfo& anchor, const HwSpec& target);

// Whether construction vectorizes along axis `a` on a CPU: a spatial axis,
// or a reduction axis of a reduction; never an axis of one element (one
// lane used: the scalar kernel under another name).
bool offers_vector_along(const AnchorInfo& anchor, int a);

// Checks a whole state against the target's limits; empty when legal.
Reason legality(const StateData& state, const AnchorInfo& anchor, const HwSpec& target);
std::string check_legal(const StateData& state, const AnchorInfo& anchor, const HwSpec& target);

const char* step_name(StepKind kind);

// Registers per thread a GPU state needs, about (the model's estimate, checked against ptxas in tests).
int64_t gpu_register_estimate(const StateData& state, const AnchorInfo& anchor);

// Capacity of the private cache `from_inner` levels out from L1 (clamped).
int64_t private_cache_bytes(const CpuSpec& cpu, int from_inner);

}  // namespace loom
