// Every schedule state the strategies can emit must compute the right
// result: random legal states (random walks over the primitives) for every
// operator, each compiled and compared with the reference executor; plus
// the strategies' own top candidates, and state replay/serialization.
#include <functional>
#include <numeric>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "construct/analytic_model.h"
#include "construct/construct.h"
#include "construct/roller.h"
#include "construct/state_graph.h"
#include "driver/compile_schedule.h"
#include "lower/lower.h"
#include "schedule/task.h"
#include "schedule/anchor.h"
#include "schedule/path.h"
#include "schedule/prefetch_hints.h"
#include "schedule/schedule.h"
#include "random_states.h"
#include "test_util.h"

namespace loom {
namespace {

using Case = test::OpCase;
using test::case_name;

std::vector<Case> cases() {
  return {
      {"matmul", {{"M", "37"}, {"N", "45"}, {"K", "29"}}},
      {"matmul", {{"M", "64"}, {"N", "64"}, {"K", "32"}}},
      {"batch_matmul", {{"B", "3"}, {"M", "13"}, {"N", "33"}, {"K", "17"}}},
      {"dense", {{"M", "9"}, {"N", "35"}, {"K", "24"}, {"epilogue", "bias_gelu"}}},
      {"dense", {{"M", "16"}, {"N", "48"}, {"K", "20"}, {"epilogue", "bias_relu"}}},
      {"conv2d", {{"N", "1"}, {"H", "9"}, {"W", "10"}, {"CI", "5"}, {"CO", "19"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}},
      {"conv2d", {{"N", "2"}, {"H", "8"}, {"W", "7"}, {"CI", "6"}, {"CO", "8"}, {"KH", "3"}, {"KW", "2"},
                  {"stride", "2"}, {"pad", "1"}, {"dilation", "2"}, {"groups", "2"}, {"layout", "NCHW"}}},
      {"depthwise_conv2d", {{"N", "1"}, {"H", "11"}, {"W", "9"}, {"C", "21"}, {"KH", "3"}, {"KW", "3"}, {"stride", "2"}, {"pad", "1"}}},
      {"conv2d_transpose", {{"N", "1"}, {"H", "4"}, {"W", "5"}, {"CI", "6"}, {"CO", "7"}, {"KH", "4"}, {"KW", "4"}, {"stride", "2"}, {"pad", "1"}}},
      {"pool2d", {{"N", "1"}, {"H", "12"}, {"W", "11"}, {"C", "18"}, {"KH", "3"}, {"KW", "3"}, {"stride", "2"}, {"pad", "1"}}},
      {"pool2d", {{"N", "1"}, {"H", "8"}, {"W", "8"}, {"C", "5"}, {"KH", "2"}, {"KW", "2"}, {"stride", "2"}, {"kind", "avg"}}},
      {"softmax", {{"M", "7"}, {"N", "45"}}},
      {"layernorm", {{"M", "6"}, {"N", "70"}}},
      {"reduce", {{"M", "5"}, {"N", "77"}}},
      {"reduce", {{"M", "3"}, {"N", "129"}, {"kind", "l2"}}},
      {"reduce", {{"M", "4"}, {"N", "50"}, {"kind", "max"}}},
      {"gelu", {{"M", "5"}, {"N", "37"}}},
      {"conv2d", {{"N", "1"}, {"H", "6"}, {"W", "7"}, {"CI", "3"}, {"CO", "18"}, {"KH", "3"}, {"KW", "3"}, {"stride", "2"}, {"pad", "1"}, {"epilogue", "bn_relu"}}},
      {"bias_add_relu", {{"M", "7"}, {"N", "19"}}},
      // 1x1 windows: states of the collapsed operators (collapse_axes.h), run on the declared buffers.
      {"conv2d", {{"N", "2"}, {"H", "5"}, {"W", "7"}, {"CI", "13"}, {"CO", "19"}, {"KH", "1"}, {"KW", "1"},
                  {"epilogue", "bn_relu"}}},
      {"conv2d", {{"N", "2"}, {"H", "3"}, {"W", "11"}, {"CI", "7"}, {"CO", "9"}, {"KH", "1"}, {"KW", "1"},
                  {"layout", "NCHW"}}},
      {"conv2d", {{"N", "2"}, {"H", "10"}, {"W", "9"}, {"CI", "4"}, {"CO", "8"}, {"KH", "1"}, {"KW", "1"},
                  {"stride", "2"}}},
  };
}


using test::random_state;

class RandomStates : public ::testing::TestWithParam<Case> {};

TEST_P(RandomStates, EveryStateMatchesTheReference) {
  Operator op = make_operator(GetParam().op, GetParam().params);
  HwSpec hw = detect_host_cpu();
  Task task = make_task(op, hw, 1);
  const AnchorInfo& anchor = *task.anchor;
  std::mt19937_64 rng(std::hash<std::string>()(case_name(GetParam())));
  auto inputs = random_inputs(op, 5);
  int packed = 0, fused = 0, vector_reduce = 0, partial = 0;
  for (int sample = 0; sample < 12; ++sample) {
    State state = random_state(anchor, hw, rng, 8 + sample * 4);
    for (int p : state->pack) packed += p >= 0;
    fused += state->fuse;
    vector_reduce += state->vec_axis >= anchor.num_spatial;
    for (int a = 0; a < anchor.num_spatial; ++a) partial += anchor.plan_extent(a) % state->tile[state->reg_level()][a] != 0;
    ASSERT_EQ(check_legal(*state, anchor, hw), "");
    Kernel k = compile_schedule(op, schedule_with_state(task, state), hw, 1 + sample % 2);
    CheckResult r = test::run_and_check(op, k, inputs);
    EXPECT_TRUE(r.ok) << "state " << state->str() << "\nsteps:\n" << serialize_steps(state->history())
                      << "max_rel_err " << r.max_rel_err;
    // The step list replays to the same state.
    State again = replay(anchor, hw, parse_steps(serialize_steps(state->history())));
    EXPECT_TRUE(*again == *state) << state->str() << " vs " << again->str();
  }
  // The walks must reach the interesting features, not only trivial states.
  if (!anchor.accesses.empty()) EXPECT_GT(packed, 0) << "no sampled state packs an input";
  if (anchor.consumer.defined()) EXPECT_GT(fused, 0) << "no sampled state fuses the consumer";
  bool odd_extent = false;
  for (int a = 0; a < anchor.num_spatial; ++a) odd_extent |= anchor.plan_extent(a) % 2 == 1;
  if (odd_extent) EXPECT_GT(partial, 0) << "no sampled state has a partial register tile";
  if (GetParam().op == "reduce") EXPECT_GT(vector_reduce, 0) << "no sampled state vectorizes the reduction";
}

TEST_P(RandomStates, StrategyCandidatesMatchTheReference) {
  Operator op = make_operator(GetParam().op, GetParam().params);
  for (const char* strategy : {"construct", "roller"}) {
    CompileOptions options;
    options.strategy = strategy;
    options.top_k = 3;
    options.walk_steps = 150;
    CheckResult r = test::compile_and_check(op, options);
    EXPECT_TRUE(r.ok) << strategy << " max_rel_err " << r.max_rel_err;
  }
}

INSTANTIATE_TEST_SUITE_P(Jit, RandomStates, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return case_name(info.param); });

// A consumer fused into the write-back of a reduction cut into blocks runs
// on the last block alone (lower/cpu/tiled_nest.cc): the blocks before it
// leave partial sums in the output. Random states made to fuse, those that
// cut the reduction kept (dense's with lanes along the reduction too, whose
// write-back first sums the lanes), GELU's, ReLU's and batch norm's
// epilogues, reduction lengths that the blocks do not divide, on one and
// two threads.
TEST(States, FusedConsumerOfASplitReduction) {
  const HwSpec hw = detect_host_cpu();
  const std::vector<Case> fusing = {
      {"dense", {{"M", "13"}, {"N", "37"}, {"K", "50"}, {"epilogue", "bias_gelu"}}},
      {"dense", {{"M", "6"}, {"N", "21"}, {"K", "67"}, {"epilogue", "bias_relu"}}},
      {"conv2d", {{"N", "1"}, {"H", "6"}, {"W", "5"}, {"CI", "11"}, {"CO", "9"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"},
                  {"epilogue", "bn_relu"}}}};
  for (const Case& c : fusing) {
    Operator op = make_operator(c.op, c.params);
    Task task = make_task(op, hw, 1);
    const AnchorInfo& anchor = *task.anchor;
    ASSERT_TRUE(anchor.consumer.defined()) << case_name(c);
    std::mt19937_64 rng(std::hash<std::string>()(case_name(c)));
    const auto inputs = random_inputs(op, 3);
    // Random walks seldom both cut the reduction and run the lanes along it: for dense, states that do are
    // made from the lanes along K, a register block of rows and columns, the cache tiles' reduction cut (the
    // steps that do not apply on this host's vector width are left out).
    std::vector<State> made;
    const std::string vectorize = "vectorize 2 " + std::to_string(hw.cpu.fp32_lanes()) + "\n";
    if (c.op == "dense") {
      for (const char* steps : {"tile_grow 3 0\ntile_grow 3 1\ntile_shrink 2 2",
                                "tile_grow 3 0\ntile_shrink 2 2\ntile_shrink 1 2"}) {
        try {
          made.push_back(replay(anchor, hw, parse_steps(vectorize + steps)));
        } catch (const UserError&) {
        }
      }
      ASSERT_FALSE(made.empty()) << case_name(c);
    }
    int split = 0, lanes_along_reduction = 0;
    for (int sample = 0; sample < 200 && (split < 6 || !made.empty()); ++sample) {
      State drawn = made.empty() ? random_state(anchor, hw, rng, 10 + sample % 20) : made.back();
      if (!made.empty()) made.pop_back();
      auto state = std::make_shared<StateData>(*drawn);
      state->fuse = true;
      const int reg = state->reg_level();
      bool cut = false;
      for (int a = anchor.num_spatial; a < anchor.num_axes(); ++a)
        cut |= reg > 0 && state->tile[reg - 1][a] < anchor.plan_extent(a);
      if (!cut || !check_legal(*state, anchor, hw).empty()) continue;
      ++split;
      lanes_along_reduction += state->vec_axis >= anchor.num_spatial;
      Kernel k = compile_schedule(op, schedule_with_state(task, state), hw, 1 + split % 2);
      CheckResult r = test::run_and_check(op, k, inputs);
      EXPECT_TRUE(r.ok) << case_name(c) << " state " << state->str() << " max_rel_err " << r.max_rel_err;
    }
    EXPECT_GE(split, 6) << case_name(c) << ": too few sampled states cut the reduction";
    if (c.op == "dense") EXPECT_GE(lanes_along_reduction, 1) << case_name(c);
  }
}

// A spatial axis of a known extent keeps the unrolled micro-kernel in its
// last, shorter register tiles: along the vector axis always (remainders
// peeled at every level, a narrower last vector), along the others when the
// parallel tiles divide the extent or cover it (remainders peeled at every
// level below, 49 rows in tiles of 18 then 6 ending in tiles of 6 and 1).
// Where they do not, the register tiles are still all whole when every size
// the enclosing tiles take is a multiple of the register tile (14 in tiles
// of 8, then of 2). No element loop of such an axis has a size computed at
// run time, and a last, partial vector is one masked vector. Odd channel,
// row and column counts; and even ones, where only the multiples say so.
// Past lowering's bound on copies of the micro-kernel every tile is cut at
// run time instead: those states are only checked against the reference.
TEST(States, KnownRemaindersKeepTheFastMicroKernel) {
  struct Shape {
    Case c;
    bool even;  // extents whose cut tiles share a factor with the register tile
  };
  const std::vector<Shape> shapes = {
      {{"depthwise_conv2d", {{"N", "1"}, {"H", "9"}, {"W", "7"}, {"C", "37"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}},
       false},
      {{"matmul", {{"M", "13"}, {"N", "45"}, {"K", "21"}}}, false},
      {{"dense", {{"M", "5"}, {"N", "83"}, {"K", "16"}, {"epilogue", "bias_relu"}}}, false},
      {{"depthwise_conv2d",
        {{"N", "1"}, {"H", "14"}, {"W", "14"}, {"C", "24"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}},
       true},
      {{"matmul", {{"M", "14"}, {"N", "40"}, {"K", "9"}}}, true},
  };
  // The host's own spec, and a fixed one whose sampled states are the same
  // on every machine (the host's vector width changes which states sampling
  // reaches).
  for (const HwSpec& hw : {detect_host_cpu(), load_hwspec("haswell_avx2")}) {
    int multiples_only = 0, nested_total = 0;  // in the even shapes; in all
    for (const auto& [c, even] : shapes) {
      Operator op = make_operator(c.op, c.params);
      Task task = make_task(op, hw, 1);
      const AnchorInfo& anchor = *task.anchor;
      std::mt19937_64 rng(std::hash<std::string>()(case_name(c)));
      auto inputs = random_inputs(op, 3);
      int vector_remainders = 0, row_remainders = 0, nested_row_remainders = 0, compiled = 0;
      // The even shapes are there for the states whose tiles are whole by
      // multiples alone, which few random walks reach: they sample longer and
      // compile only those.
      for (int sample = 0; sample < (even ? 400 : 60) && compiled < (even ? 3 : 8); ++sample) {
        State state = random_state(anchor, hw, rng, 6 + sample % 10);
        // Only parallel tiles cut an extent at run time: the even shapes' are
        // halved along a random axis.
        for (int halve = 0; even && halve < 2; ++halve)
          if (StepResult r = apply_step(*state, {StepKind::TileShrink, 0, int(rng() % 2)}, anchor, hw)) state = r.state;
        const int reg = state->reg_level();
        std::vector<std::string> static_axes;
        bool remainder = false, by_multiples = false;
        const bool peels = peels_known_remainders(*state, anchor);
        for (int a = 0; a < anchor.num_spatial && peels; ++a) {
          const int64_t extent = anchor.plan_extent(a), R = state->tile[reg][a];
          const bool vector = a == state->vec_axis && state->vec_width > 1;
          int64_t multiple = extent;  // every size the tiles so far take is a multiple of it
          bool known = extent <= state->tile[0][a] || extent % state->tile[0][a] == 0, nested = false;
          if (!known) multiple = std::gcd(extent, state->tile[0][a]);
          for (int l = 1; l < reg; ++l) {
            const int64_t T = state->tile[l][a];
            nested |= known && extent > T && extent % T != 0;
            if (known) continue;
            known = multiple % T == 0;
            multiple = std::gcd(multiple, T);
          }
          if (!vector && !known && multiple % R != 0) continue;
          static_axes.push_back(anchor.axes[a].name());
          by_multiples |= !vector && !known && R > 1;
          if (extent % R == 0 && !nested) continue;
          remainder = true;
          (vector ? vector_remainders : row_remainders) += 1;
          nested_row_remainders += !vector && nested;
        }
        if (even ? !by_multiples : !remainder && !by_multiples) continue;
        multiples_only += even;
        ++compiled;
        Kernel k = compile_schedule(op, schedule_with_state(task, state), hw, 1);
        EXPECT_TRUE(test::run_and_check(op, k, inputs).ok) << state->str();
        std::istringstream ir(k.report().loop_ir);
        // A loop bound over a static axis may only depend on the unrolled
        // vector index (a known narrower last vector), never on run-time sizes.
        // A partial vector runs as one masked vector (where the target masks).
        for (std::string line; std::getline(ir, line);) {
          if (line.find("vectorized for e_") != std::string::npos)
            EXPECT_NE(line.find(" masked"), std::string::npos) << state->str() << ": " << line;
          for (const std::string& name : static_axes) {
            const std::string loop = "for e_" + name + " in [0, min(";
            const size_t at = line.find(loop);
            if (at == std::string::npos) continue;
            const std::string rest = line.substr(at + loop.size()), vector_index = "e_" + name + "_v";
            std::string bound;
            for (size_t i = 0; i < rest.size();)
              if (rest.compare(i, vector_index.size(), vector_index) == 0) i += vector_index.size();
              else bound += rest[i++];
            EXPECT_EQ(bound.find_first_of("abcdefghijklmnopqrstuvwxyz_"), bound.rfind(" x") + 1)
                << c.op << " " << state->str() << ": " << line;
          }
        }
      }
      if (even) continue;
      EXPECT_GE(vector_remainders, 2) << c.op << ": too few sampled states with a vector remainder";
      EXPECT_GE(row_remainders, 1) << c.op << ": too few sampled states with a row remainder";
      nested_total += nested_row_remainders;
    }
    EXPECT_GE(nested_total, 1) << hw.name << ": no sampled state cuts rows short above the register tile";
    EXPECT_GE(multiples_only, 1) << hw.name << ": no sampled state's register tiles are whole by multiples alone";
  }
}

// A packed input is filled a register tile's row at a time: the index into
// the packed buffer has no division or modulo by the register tile (they cost
// a GEMM's pack of B several times the copy itself at 40 columns), and the
// last, shorter tile of a region the register tile does not divide is filled
// too (the kernel matches the reference).
TEST(States, PacksFillRegisterTilesWithoutDivision) {
  Operator op = make_operator("matmul", {{"M", "37"}, {"N", "203"}, {"K", "45"}});
  HwSpec hw = load_hwspec("haswell_avx2");
  Task task = make_task(op, hw, 1);
  const AnchorInfo& anchor = *task.anchor;
  auto inputs = random_inputs(op, 5);
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int sample = 0; sample < 400 && checked < 6; ++sample) {
    State state = random_state(anchor, hw, rng, 6 + sample % 10);
    const int64_t R = state->tile[state->reg_level()][1];  // B's columns per register tile
    if (state->pack[1] < 0 || R < 2 || (R & (R - 1)) == 0) continue;
    ++checked;
    Kernel k = compile_schedule(op, schedule_with_state(task, state), hw, 1);
    EXPECT_TRUE(test::run_and_check(op, k, inputs).ok) << state->str();
    std::istringstream ir(k.report().loop_ir);
    int fills = 0;
    for (std::string line; std::getline(ir, line);) {
      if (line.find("packed_B[") == std::string::npos || line.find("] = B[") == std::string::npos) continue;
      ++fills;
      const std::string index = line.substr(0, line.find("] = B["));
      EXPECT_EQ(index.find_first_of("/%"), std::string::npos) << state->str() << ": " << line;
    }
    EXPECT_GE(fills, 1) << state->str() << ": no fill of packed_B in\n" << k.report().loop_ir;
  }
  EXPECT_GE(checked, 3) << "too few sampled states pack B with a register tile that is not a power of two";
}

// A pack writes the packed buffer a register tile's row at a time: in whole
// vectors where the source is contiguous along the row too (a matmul's B);
// where the pack transposes (a dense layer's weights, contiguous along K),
// a cache line of the source along K at a time, each row's line used whole,
// in blocks transposed through registers (scalar copies where the sizes are
// not whole blocks). No loop of a pack is one LLVM may turn into gathers or
// scatters. Odd sizes, so rows, lines and regions are cut short;
// every kernel matches the reference.
TEST(States, PacksWriteWholeRowsInnermost) {
  for (const HwSpec& hw : {detect_host_cpu(), load_hwspec("haswell_avx2")})
    for (const std::string name : {"matmul", "dense"}) {
      Operator op = make_operator(name, {{"M", "13"}, {"N", "83"}, {"K", "29"}});
      Task task = make_task(op, hw, 1);
      const AnchorInfo& anchor = *task.anchor;
      auto inputs = random_inputs(op, 5);
      std::mt19937_64 rng(11);
      const std::string weights = name == "matmul" ? "B" : "W";
      int checked = 0;
      for (int sample = 0; sample < 400 && checked < 4; ++sample) {
        State state = random_state(anchor, hw, rng, 6 + sample % 10);
        if (state->pack[1] < 0 || state->vec_axis != 1 || state->tile[state->reg_level()][1] < 2) continue;
        ++checked;
        Kernel k = compile_schedule(op, schedule_with_state(task, state), hw, 1);
        EXPECT_TRUE(test::run_and_check(op, k, inputs).ok) << state->str();
        std::istringstream ir(k.report().loop_ir);
        std::vector<std::string> lines;
        for (std::string line; std::getline(ir, line);) lines.push_back(line);
        int fills = 0;
        for (size_t l = 1; l < lines.size(); ++l) {
          if (lines[l].find("packed_" + weights + "[") == std::string::npos ||
              lines[l].find("] = " + weights + "[") == std::string::npos)
            continue;
          ++fills;
          if (name == "matmul") {
            EXPECT_NE(lines[l - 1].find("vectorized for v_j_in in"), std::string::npos) << k.report().loop_ir;
          } else {
            EXPECT_NE(lines[l - 1].find("scalar for v_k_in in"), std::string::npos) << k.report().loop_ir;
            EXPECT_NE(lines[l - 2].find("transposed for v_j_in in"), std::string::npos) << k.report().loop_ir;
          }
          for (size_t o = l - 1; o > 0 && lines[o].find(" v_") != std::string::npos; --o)
            EXPECT_NE(lines[o].compare(lines[o].find_first_not_of(' '), 6, "for v_"), 0)
                << "a pack loop LLVM may vectorize: " << lines[o];
        }
        EXPECT_GE(fills, 1) << state->str() << ": no fill of packed_" << weights << " in\n" << k.report().loop_ir;
      }
      EXPECT_GE(checked, 2) << name << ": too few sampled states pack the weights along the vector axis";
    }
}

// Random states of a dense layer of `sizes` on `hw` that `wanted` accepts,
// compiled and checked against the reference, until `enough` of them pass
// `counts` (or 3000 are drawn): how many did.
int count_sampled_dense_states(const HwSpec& hw, const std::map<std::string, std::string>& sizes, uint64_t seed,
                               int enough, const std::function<bool(const State&)>& wanted,
                               const std::function<bool(const Kernel&)>& counts) {
  Operator op = make_operator("dense", sizes);
  Task task = make_task(op, hw, 1);
  auto inputs = random_inputs(op, 3);
  std::mt19937_64 rng(seed);
  int counted = 0;
  for (int sample = 0; sample < 3000 && counted < enough; ++sample) {
    State state = random_state(*task.anchor, hw, rng, 6 + sample % 10);
    if (!wanted(state)) continue;
    Kernel k = compile_schedule(op, schedule_with_state(task, state), hw, 1);
    EXPECT_TRUE(test::run_and_check(op, k, inputs).ok) << state->str() << "\n" << k.report().loop_ir;
    counted += counts(k);
  }
  return counted;
}

// A dense layer's weights, packed with whole blocks of a register tile's
// vectors by a cache line along K: each block is copied through registers
// (loads along K, shuffles, stores along N), on 16 lanes and on 8 (16-lane
// lines: two blocks). M is odd; every kernel matches the reference.
// Packed panels a multiple of many cache lines apart would take the same
// row of every panel to a few L1 sets while the pack writes a row of each in
// turn: such panels are a line further apart. On a 64-set, 8-way L1, B's
// panels of 128 x 32 floats (16 KB, one set reached) and 128 x 16 (8 KB)
// get a line between them; panels of 100 x 32 (200 lines, 8 sets reached by
// 32 panels, 4 to a set) do not. Every kernel matches the reference.
TEST(States, PanelsThatWouldCrowdL1SetsArePaddedByALine) {
  const HwSpec hw = load_hwspec("zen4_server");
  ASSERT_EQ(hw.cpu.caches.front().size_bytes / hw.cpu.caches.front().associativity, 4096);
  struct Case {
    std::string K, steps;
    int64_t panels, panel;
    bool padded;
  };
  const std::string wide = "vectorize 1 16\ntile_grow 3 1\ntile_grow 3 0\npack 1 7\n";
  const std::string narrow = "vectorize 1 16\ntile_grow 3 0\npack 1 7\n";
  for (const Case& c : {Case{"128", wide, 32, 128 * 32, true}, Case{"128", narrow, 63, 128 * 16, true},
                        Case{"100", wide, 32, 100 * 32, false}}) {
    const Operator op = make_operator("matmul", {{"M", "37"}, {"N", "1000"}, {"K", c.K}});
    const Task task = make_task(op, hw, 1);
    const State s = replay(*task.anchor, hw, parse_steps(c.steps));
    const Kernel k = compile_schedule(op, schedule_with_state(task, s), hw, 1);
    const int64_t size = c.panels * (c.panel + (c.padded ? 16 : 0));
    EXPECT_NE(k.report().loop_ir.find("allocate packed_B[" + std::to_string(size) + "]"), std::string::npos)
        << s->str() << "\n" << k.report().loop_ir;
    EXPECT_TRUE(test::run_and_check(op, k, random_inputs(op, 3)).ok) << s->str();
  }
}

TEST(States, TransposingPacksCopyWholeBlocksThroughRegisters) {
  for (const HwSpec& hw : {detect_host_cpu(), load_hwspec("haswell_avx2")}) {
    const int transposed = count_sampled_dense_states(
        hw, {{"M", "13"}, {"N", "96"}, {"K", "80"}}, 17, 3,
        [](const State& s) { return s->pack[1] >= 0 && s->vec_axis == 1 && s->vec_width >= 8; },
        [](const Kernel& k) {  // not where blocks are cut short
          return k.report().loop_ir.find("transposed for") != std::string::npos &&
                 k.llvm_ir().find("shufflevector") != std::string::npos;
        });
    EXPECT_GE(transposed, 2) << hw.name << ": too few sampled states transpose whole blocks";
  }
}

// A dense layer vectorized along K ends each output's reduction with a
// horizontal sum of the accumulator's lanes: folded in halves, each half
// one vector operation (log2 of the lanes steps, as the model charges),
// not lane after lane. On 16 lanes and on 8, K odd (a remainder of scalar
// steps into lane 0), register tiles of several vectors along K included;
// every kernel matches the reference.
TEST(States, VectorizedReductionsFoldTheirLanesInHalves) {
  for (const HwSpec& hw : {detect_host_cpu(), load_hwspec("haswell_avx2")}) {
    const int folded = count_sampled_dense_states(
        hw, {{"M", "5"}, {"N", "7"}, {"K", "83"}}, 11, 4,
        [](const State& s) { return s->vec_axis == 2 && s->vec_width >= 8; },
        [](const Kernel& k) {
          const std::string& ir = k.report().loop_ir;
          return ir.find("vectorized for l_fold in [0, 4) x4") != std::string::npos &&
                 ir.find("vectorized for l_fold in [0, 2) x2") != std::string::npos;
        });
    EXPECT_GE(folded, 3) << hw.name << ": too few sampled states fold their lanes in vector halves";
  }
}

// A micro-kernel's accumulators along a spatial vector axis are whole vectors
// per row, so a partial vector's dead lanes hold no element: its updates
// write them (an FMA, with no blend keeping them). A vectorized reduction's
// lanes are summed at the end, and a row reduction's accumulator is folded
// whole: their dead lanes must keep the identity. Odd sizes, on the host's
// lanes and on 8; every kernel on the host's matches the reference.
TEST(States, OnlyAccumulatorsAlongASpatialVectorLetPartialVectorsWriteTheirDeadLanes) {
  const HwSpec host = detect_host_cpu();
  for (const HwSpec& hw : {host, load_hwspec("haswell_avx2")}) {
    const Operator op = make_operator("matmul", {{"M", "5"}, {"N", "61"}, {"K", "37"}});
    const Task task = make_task(op, hw, 1);
    const State s = initial_state(*task.anchor, hw);
    const auto inputs = random_inputs(op, 3);
    for (int axis : {1, 2}) {  // N, then K
      const StepResult v = apply_step(*s, {StepKind::Vectorize, axis, hw.cpu.fp32_lanes()}, *task.anchor, hw);
      ASSERT_TRUE(v) << v.why();
      const Kernel k = compile_schedule(op, schedule_with_state(task, v.state), hw, 1);
      const std::string& ir = k.report().loop_ir;
      EXPECT_NE(ir.find("allocate acc["), std::string::npos) << ir;
      // Along N a partial vector of 13 lanes; along K a scalar remainder.
      EXPECT_EQ(ir.find(" masked") != std::string::npos, axis == 1) << ir;
      EXPECT_EQ(ir.find("dead-lanes-free") != std::string::npos, axis == 1) << v.state->str() << "\n" << ir;
      // Without AVX-512 the partial vector's loads are masked (AVX's
      // vmaskmovps) and its stores go out in pieces, not masked.
      if (axis == 1 && hw.name == "haswell_avx2") {
        EXPECT_NE(k.llvm_ir().find("@llvm.masked.load"), std::string::npos) << k.llvm_ir();
        EXPECT_EQ(k.llvm_ir().find("@llvm.masked.store"), std::string::npos) << k.llvm_ir();
      }
      if (hw.name == host.name) EXPECT_TRUE(test::run_and_check(op, k, inputs).ok) << v.state->str();
    }
    const Operator softmax = make_operator("softmax", {{"M", "3"}, {"N", "37"}});
    CompileOptions options;
    options.target = hw;
    const Kernel rows = compile(softmax, options);
    const std::string ir = rows.report().loop_ir;
    EXPECT_NE(ir.find("allocate row_acc["), std::string::npos) << ir;
    EXPECT_EQ(ir.find("dead-lanes-free"), std::string::npos) << ir;
    // A row's remainder of 5 (37 = 4 x 8 + 5) after its whole vectors is one
    // masked vector there too, not an exponential per element: no scalar
    // float arithmetic is left.
    if (hw.name == "haswell_avx2") {
      EXPECT_NE(rows.llvm_ir().find("@llvm.masked.load"), std::string::npos) << rows.llvm_ir();
      EXPECT_FALSE(std::regex_search(rows.llvm_ir(), std::regex(R"(= f(mul|add|sub) [a-z ]*float )")))
          << rows.llvm_ir();
    }
    if (hw.name == host.name) EXPECT_TRUE(test::run_and_check(softmax, rows, random_inputs(softmax, 5)).ok);
  }
}

// The model knows which nests lowering peels (peels_known_remainders):
// past lowering's bound on copies of the micro-kernel, the length of every
// vector loop that reaches a remainder is computed at run time from the
// tile's position. Extents that no tile divides, so that every axis has
// remainders; states vectorized along a spatial axis or the reduction.
TEST(States, TheModelKnowsWhichNestsPeelTheirRemainders) {
  const HwSpec hw = load_hwspec("haswell_avx2");
  const Operator op = make_operator("matmul", {{"M", "127"}, {"N", "127"}, {"K", "1023"}});
  const Task task = make_task(op, hw, 1);
  const std::regex run_time_vector_length(R"(vectorized for e_\w+ in \[0, [^\n]*\bt\d+_)");
  std::mt19937_64 rng(67);
  int peeled = 0, cut_at_run_time = 0;
  for (int sample = 0; sample < 1500 && cut_at_run_time < 10; ++sample) {
    const State state = test::random_state(*task.anchor, hw, rng, 10 + sample % 40);
    if (state->vec_width == 1) continue;
    const std::string ir = to_text(lower(op, schedule_with_state(task, state)));
    const bool run_time = std::regex_search(ir, run_time_vector_length);
    EXPECT_EQ(peels_known_remainders(*state, *task.anchor), !run_time) << state->str() << "\n" << ir;
    (run_time ? cut_at_run_time : peeled) += 1;
  }
  EXPECT_GE(peeled, 20);
  EXPECT_GE(cut_at_run_time, 10);
}

// A register block of few accumulator vectors (a narrow tile, the last row
// of 37) cycles through copies of them along the unrolled reduction loop,
// step k into copy k mod copies, as many as fill the FMAs in flight
// (accumulator_copies): the loop IR has the copies' unrolled loop, and a
// tail where they do not divide the trips; a block of many vectors keeps
// one set; every kernel matches the reference, the trips divided or not.
TEST(States, SmallRegisterBlocksCycleThroughCopiesOfTheirAccumulators) {
  const std::regex copies_loop(R"(unrolled for c_k in \[0, (\d+)\))"), tail_loop(R"(for e_k_t in \[0, )");
  for (const HwSpec& hw : {load_hwspec("haswell_avx2"), detect_host_cpu()}) {
    const CpuCaches caches = cpu_caches_of(hw.cpu);
    ASSERT_GT(caches.fma_chains, 1) << hw.name;
    for (const char* K : {"67", "64"}) {
      const Operator op = make_operator("matmul", {{"M", "37"}, {"N", "45"}, {"K", K}});
      const Task task = make_task(op, hw, 1);
      const AnchorInfo& anchor = *task.anchor;
      const auto inputs = random_inputs(op, 5);
      std::mt19937_64 rng(std::hash<std::string>()(hw.name + K));
      int split = 0, whole = 0, tails = 0;
      for (int sample = 0; sample < 400 && (split < 4 || whole < 1); ++sample) {
        const State state = test::random_state(anchor, hw, rng, 6 + sample % 20);
        if (state->vec_width == 1 || anchor.is_reduce_axis(state->vec_axis)) continue;
        const int reg = state->reg_level();
        const int64_t W = state->vec_width, R = state->tile[reg][0], C = state->tile[reg][1];
        const int64_t vectors = R * ((C + W - 1) / W);
        const int64_t tile_copies = accumulator_copies(*state, anchor, vectors, caches.fma_chains,
                                                       caches.vector_registers);
        const int64_t most = accumulator_copies(*state, anchor, 1, caches.fma_chains, caches.vector_registers);
        const Schedule schedule = schedule_with_state(task, state);
        const std::string ir = to_text(lower(op, schedule));
        std::set<int64_t> seen;
        for (auto it = std::sregex_iterator(ir.begin(), ir.end(), copies_loop); it != std::sregex_iterator(); ++it)
          seen.insert(std::stoll((*it)[1]));
        for (int64_t c : seen) EXPECT_TRUE(c > 1 && c <= most) << state->str() << ": " << c << " copies";
        if (most == 1) EXPECT_TRUE(seen.empty()) << state->str();
        // The full tile's block, where its K loop runs its copies' trips.
        const bool full_tile_runs = R <= 37 && C <= 45 &&
                                    call_trips(*state, anchor, 2) >= tile_copies;
        if (tile_copies > 1 && full_tile_runs) EXPECT_TRUE(seen.count(tile_copies)) << state->str() << "\n" << ir;
        if (seen.empty() && most == 1) continue;
        (seen.empty() ? whole : split) += 1;
        tails += std::regex_search(ir, tail_loop);
        EXPECT_TRUE(test::run_and_check(op, compile_schedule(op, schedule, hw, 1), inputs).ok) << state->str();
      }
      EXPECT_GE(split, 4) << hw.name << " K=" << K << ": too few sampled states split their accumulators";
      EXPECT_GE(whole, 1) << hw.name << " K=" << K << ": too few sampled states keep one set";
      if (std::string(K) == "67") EXPECT_GE(tails, 1) << hw.name << ": no copies left a tail";
    }
  }
}

// A GEMM's B read in place, its rows N floats apart and a register tile's
// run of them read per step, is prefetched some steps ahead: one hint per
// line of the run and one at its last element, on the first pass over B's
// tile where more than one row tile reads it (the reduction loops then come
// twice). Packed, or read whole rows at a time, B is not hinted, nor is A,
// read along its rows. The hints' addresses run past B's end on the last
// steps (harmless: nothing reads them). Odd sizes, on 16 lanes and on 8;
// every kernel matches the reference.
TEST(States, OperandsReadInPlaceWithGapsBetweenRowsArePrefetchedAhead) {
  for (const HwSpec& hw : {detect_host_cpu(), load_hwspec("haswell_avx2")}) {
    Operator op = make_operator("matmul", {{"M", "5"}, {"N", "83"}, {"K", "131"}});
    Task task = make_task(op, hw, 1);
    auto inputs = random_inputs(op, 7);
    std::mt19937_64 rng(23);
    int hinted = 0, first_pass_only = 0, packed = 0;
    for (int sample = 0; sample < 3000 && (hinted < 3 || first_pass_only < 1 || packed < 2); ++sample) {
      State state = random_state(*task.anchor, hw, rng, 4 + sample % 10);
      if (state->vec_axis != 1 || state->vec_width == 1) continue;
      Kernel k = compile_schedule(op, schedule_with_state(task, state), hw, 1);
      const std::string& ir = k.report().loop_ir;
      const size_t hint = ir.find("prefetch B[");
      if (hint == std::string::npos && state->pack[1] < 0) continue;
      EXPECT_TRUE(test::run_and_check(op, k, inputs).ok) << state->str() << "\n" << ir;
      EXPECT_EQ(ir.find("prefetch A["), std::string::npos) << "A is read along its rows\n" << ir;
      if (state->pack[1] >= 0) {
        EXPECT_EQ(ir.find("prefetch"), std::string::npos) << "packed B hinted\n" << ir;
        ++packed;
        continue;
      }
      EXPECT_LT(state->tile[state->reg_level()][1], 83) << "B read whole rows at a time, hinted\n" << ir;
      EXPECT_NE(k.llvm_ir().find("llvm.prefetch"), std::string::npos) << state->str();
      ++hinted;
      // Row tiles of fewer than 5 rows: B's tile is read by several, and
      // hinted on the first pass only: `if (t3_i == 0):` the loops with the
      // hints, `else:` the loops without.
      const size_t first = ir.rfind("== 0):", hint);
      const bool versioned = first != std::string::npos && ir.find("else:", hint) != std::string::npos;
      if (state->tile[state->reg_level()][0] < 5 && versioned) ++first_pass_only;
    }
    EXPECT_GE(hinted, 3) << hw.name << ": too few sampled states read B in place with gaps";
    EXPECT_GE(first_pass_only, 1) << hw.name << ": no sampled state hints B's first pass only";
    EXPECT_GE(packed, 2) << hw.name << ": too few sampled states pack B";
  }
}

// Which passes over B's tile are hinted, on the bundled Emerald Rapids spec
// (L2 delivers 22 bytes per vector FMA at 2.97 GHz, 2 FMA units): the first
// however many follow, and every one where the micro-kernel reads faster than
// that. M = 5 (and 19), N = 83, K = 131 (and 601); every kernel matches the
// reference.
TEST(States, HintsGoOnTheFirstPassUnlessTheMicroKernelReadsFasterThanL2) {
  HwSpec hw = load_hwspec("emerald_rapids");
  Operator op = make_operator("matmul", {{"M", "5"}, {"N", "83"}, {"K", "131"}});
  Task task = make_task(op, hw, 1);
  auto inputs = random_inputs(op, 3);
  auto loop_ir = [&](const std::string& steps) {
    const State s = replay(*task.anchor, hw, parse_steps("vectorize 1 16\n" + steps));
    const Kernel k = compile_schedule(op, schedule_with_state(task, s), hw, 1);
    EXPECT_TRUE(test::run_and_check(op, k, inputs).ok) << s->str();
    return k.report().loop_ir;
  };
  // The lines nested under the line at `at` (indented deeper).
  auto block = [](const std::string& ir, size_t at) {
    const size_t start = ir.rfind('\n', at) + 1, indent = ir.find_first_not_of(' ', start) - start;
    size_t end = ir.find('\n', at);
    while (end != std::string::npos && end + 1 < ir.size() && ir.find_first_not_of(' ', end + 1) - (end + 1) > indent)
      end = ir.find('\n', end + 1);
    return ir.substr(at, end == std::string::npos ? std::string::npos : end - at);
  };
  // Where B's hint `hint`, written at step e_k, is in `ir`: blocks of few
  // accumulators step through copies of them, at e_k = e_k_o * copies + c_k
  // (accumulator_copies).
  auto find_hint = [](const std::string& ir, const std::string& hint) {
    const std::string escaped = std::regex_replace(hint, std::regex(R"([\[\]()*+])"), R"(\$&)");
    const std::regex at(std::regex_replace(escaped, std::regex("e_k"), R"((?:e_k|\(\(e_k_o \* \d+\) \+ c_k\)))"));
    std::smatch m;
    return std::regex_search(ir, m, at) ? size_t(m.position(0)) : std::string::npos;
  };
  // 1 x 80: 320 bytes a step against 5 FMAs' 110, five passes: every pass
  // hinted, with no second copy of the loops.
  std::string ir = loop_ir("tile_grow 3 1\ntile_grow 3 1\ntile_grow 3 1\ntile_grow 3 1\n");
  EXPECT_LT(find_hint(ir, "prefetch B[(((e_k + 5) * 83) + (t3_j * 80))]"), ir.find("if (t3_i == 0):")) << ir;
  // 2 x 16: 64 bytes against 2 FMAs' 44, three passes: likewise.
  const std::string row_hint = "prefetch B[(((e_k + 16) * 83) + (t3_j * 16))]";
  ir = loop_ir("tile_grow 3 0\n");
  EXPECT_LT(find_hint(ir, row_hint), ir.find("if (t3_i == 0):")) << ir;
  // 3 x 16: 64 bytes against 3 FMAs' 66, two passes: the first hinted.
  ir = loop_ir("tile_grow 3 0\ntile_grow 3 0\n");
  const size_t first = ir.find("if (t3_i == 0):");
  ASSERT_NE(first, std::string::npos) << ir;
  EXPECT_NE(find_hint(block(ir, first), row_hint), std::string::npos) << ir;
  const size_t rest = ir.find("else:", first);
  ASSERT_NE(rest, std::string::npos) << ir;
  EXPECT_EQ(block(ir, rest).find("prefetch"), std::string::npos) << ir;
  // Nothing in these asks L2: 64-byte runs, but the loop's 131 steps are
  // fewer than 4x the reach ahead (below).
  EXPECT_EQ(ir.find("prefetch to L2"), std::string::npos) << ir;

  // 3 x 48 over 19 rows: 192 bytes against 9 FMAs' 198, seven passes, the
  // first hinted (unhinted, it waits on every row of B from beyond L2), and
  // its runs, shorter than prefetchers follow, asked of L2 too: 200 ns
  // ahead, 132 steps of 9 FMAs at 5.94 a nanosecond.
  op = make_operator("matmul", {{"M", "19"}, {"N", "83"}, {"K", "601"}});
  task = make_task(op, hw, 1);
  inputs = random_inputs(op, 3);
  ir = loop_ir("tile_grow 3 0\ntile_grow 3 0\ntile_grow 3 1\ntile_grow 3 1\n");
  const size_t seven = ir.find("for t3_i in [0, 6):");
  const size_t first_of_seven = ir.find("if (t3_i == 0):");
  ASSERT_NE(seven, std::string::npos) << ir;
  ASSERT_NE(first_of_seven, std::string::npos) << ir;
  const std::string hinted = block(ir, first_of_seven);
  EXPECT_NE(hinted.find("prefetch B[(((e_k + 8) * 83) + (t3_j * 48))]"), std::string::npos) << ir;
  EXPECT_NE(hinted.find("prefetch to L2 B[(((e_k + 132) * 83) + (t3_j * 48))]"), std::string::npos) << ir;
  EXPECT_EQ(block(ir, ir.find("else:", first_of_seven)).find("prefetch"), std::string::npos) << ir;
}

// Runs a lowered nest's control flow alone (loop indices, conditions, and the
// addresses of prefetches and of the loads a pack copies), reporting each
// prefetch into L2, each element a pack copies from its source, each other
// store and each parallel tile.
class AddressWalk {
 public:
  std::function<void(int64_t)> on_l2_hint, on_pack_read;
  std::function<void()> on_other_store, on_parallel_tile;

  void run(const Stmt& s) {
    if (auto* f = s->as<ForNode>()) {
      const int64_t n = eval(f->extent);
      for (int64_t i = 0; i < n; ++i) {
        if (f->for_kind == ForKind::Parallel) on_parallel_tile();
        env_[f->var.get()] = i;
        run(f->body);
      }
    } else if (auto* q = s->as<SeqNode>()) {
      for (const Stmt& c : q->stmts) run(c);
    } else if (auto* a = s->as<AllocateNode>()) {
      run(a->body);
    } else if (auto* c = s->as<IfThenElseNode>()) {
      if (eval(c->cond)) run(c->then_case);
      else if (c->else_case) run(c->else_case);
    } else if (auto* p = s->as<PrefetchNode>()) {
      if (p->cache == 2) on_l2_hint(eval(p->index));
    } else if (auto* st = s->as<StoreNode>()) {
      const auto* load = st->value.get()->as<LoadNode>();
      if (st->buffer->name.rfind("packed_", 0) == 0 && load) on_pack_read(eval(load->index));
      else on_other_store();
    }
  }

 private:
  int64_t eval(const Expr& e) {
    const ExprNode* n = e.get();
    if (auto* i = n->as<IntImmNode>()) return i->value;
    if (n->as<VarNode>()) return env_.at(n);
    if (auto* s = n->as<SelectNode>()) return eval(s->cond) ? eval(s->then_value) : eval(s->else_value);
    if (auto* c = n->as<CompareNode>()) return apply_compare(c->op, eval(c->a), eval(c->b));
    if (auto* b = n->as<BinaryNode>()) {
      if (b->op == BinaryOp::And) return eval(b->a) && eval(b->b);
      if (b->op == BinaryOp::Or) return eval(b->a) || eval(b->b);
      return apply_int_op(b->op, eval(b->a), eval(b->b));
    }
    throw InternalError("AddressWalk: cannot evaluate " + e.str());
  }
  std::unordered_map<const ExprNode*, int64_t> env_;
};

// A pack copying its region of an operand that does not stay in L2 (B of a
// GEMM, here over 64 KiB against an L2 shrunk to 32 KiB) reads it from
// farther out, in rows N floats apart that no prefetcher follows, and waits
// on each (a 1x1 convolution's 4 MB of weights, packed 256 x 32 at a time:
// 0.74-0.78 ms per call, 0.62-0.67 with the next region hinted). So while
// the micro-kernels compute on one region, their first pass asks L2 for the
// next one's source, a step's run per reduction step. Walked through the
// nest for random states packing B: whenever a block hints, every line the
// next pack copies was hinted during that block. Each kernel matches the
// reference. With B inside L2 (the spec's own 256 KiB), nothing is hinted.
TEST(States, PacksPrefetchTheNextRegionsSourceIntoL2WhereTheOperandOutgrowsIt) {
  const Operator op = make_operator("matmul", {{"M", "7"}, {"N", "131"}, {"K", "157"}});
  const auto inputs = random_inputs(op, 5);
  HwSpec small_l2 = load_hwspec("haswell_avx2");
  small_l2.cpu.caches[1].size_bytes = 32 * 1024;
  int hinting = 0;
  std::mt19937_64 rng(41);
  for (const HwSpec& hw : {small_l2, load_hwspec("haswell_avx2")}) {
    const bool fits = hw.cpu.caches[1].size_bytes > 131 * 157 * 4;
    const Task task = make_task(op, hw, 1);
    for (int sample = 0, packed = 0; sample < 4000 && packed < 12; ++sample) {
      const State state = test::random_state(*task.anchor, hw, rng, 4 + sample % 10);
      if (state->pack[1] < 0) continue;
      ++packed;
      const Schedule sched = schedule_with_state(task, state);
      const LoweredFunc f = lower(op, sched);
      std::set<int64_t> hinted, for_this_pack;  // lines: hinted in this block, in the one before
      int64_t blocks_hinting = 0, checked = 0, missed = 0;
      bool in_pack = false;
      AddressWalk walk;
      walk.on_l2_hint = [&](int64_t index) { in_pack = false, hinted.insert(index / 16); };
      walk.on_other_store = [&] { in_pack = false; };
      walk.on_parallel_tile = [&] { in_pack = false, hinted.clear(); };
      walk.on_pack_read = [&](int64_t index) {
        if (!in_pack) {
          for_this_pack = std::move(hinted);
          hinted.clear();
          blocks_hinting += !for_this_pack.empty();
          in_pack = true;
        }
        if (for_this_pack.empty()) return;
        ++checked;
        missed += !for_this_pack.count(index / 16);
      };
      walk.run(f.body);
      const std::string ir = to_text(f);
      EXPECT_EQ(missed, 0) << missed << " of " << checked << " packed reads not hinted\n" << state->str() << "\n" << ir;
      if (fits) EXPECT_EQ(ir.find("prefetch to L2"), std::string::npos) << "B fits L2, hinted\n" << ir;
      if (blocks_hinting == 0) continue;
      ++hinting;
      EXPECT_TRUE(test::run_and_check(op, compile_schedule(op, sched, hw, 1), inputs).ok) << state->str();
    }
  }
  EXPECT_GE(hinting, 3) << "too few sampled states hint the next pack";
}

// The hints sit in the body of the innermost reduction loop that runs more
// than once. A loop of one trip inside it (here the input channels, in
// blocks of one) is at its only step there. On the bundled Zen 4 spec, whose
// 1 MB L2 the 1.2 MB of weights outgrow, each block of weights packed is
// hinted from the next one (roller's picks for a 23x23 257->127 convolution
// failed to compile this way, the hints reading the channel loop's variable).
TEST(States, HintsAheadOfAOneTripReductionLoopReadItsOnlyStep) {
  const Operator op = make_operator("conv2d", {{"N", "1"}, {"H", "5"}, {"W", "5"}, {"CI", "131"}, {"CO", "257"},
                                               {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}});
  const HwSpec hw = load_hwspec("zen4_server");
  const Task task = make_task(op, hw, 1);
  std::string steps = "vectorize 3 16\n";
  for (int i = 0; i < 4; ++i) steps += "tile_grow 3 1\ntile_grow 3 2\n";
  const State s = replay(*task.anchor, hw, parse_steps(steps + "tile_shrink 2 6\npack 1 23"));
  ASSERT_EQ(s->tile[s->reg_level() - 1][6], 1) << s->str();
  const Kernel k = compile_schedule(op, schedule_with_state(task, s), hw, 1);
  EXPECT_TRUE(test::run_and_check(op, k, random_inputs(op, 3)).ok) << s->str();
  const std::string& ir = k.report().loop_ir;
  const size_t hint = ir.find("prefetch to L2 W[");
  ASSERT_NE(hint, std::string::npos) << ir;
  EXPECT_LT(hint, ir.find("for e_rc in [0, 1)")) << ir;
}

// How far ahead: a 64-set L1 of 16-float lines, 8 ways unless said.
TEST(States, PrefetchesReachAheadWithinHalfAWayAndHalfASetsWays) {
  // 48 floats a row (4 lines with the one a misaligned run adds), rows 771
  // floats apart, spread over the sets: half a way (32 lines) is 8 rows.
  EXPECT_EQ(prefetch_rows(771, 48, 16, 64, 8), 8);
  // Rows 4096 floats apart (a multiple of a way's 1024) all fall in the
  // same sets: half the ways, 4 of 8 or 6 of 12, though half a way holds 6.
  EXPECT_EQ(prefetch_rows(4096, 64, 16, 64, 8), 4);
  EXPECT_EQ(prefetch_rows(4096, 64, 16, 64, 12), 6);
  // 8 lines a row: half a way holds 3 rows' 9 hints.
  EXPECT_EQ(prefetch_rows(771, 128, 16, 64, 8), 3);
  // A run longer than half a way, or an L1 too small to hold any: one row.
  EXPECT_EQ(prefetch_rows(4096, 1024, 16, 64, 8), 1);
  EXPECT_EQ(prefetch_rows(771, 48, 16, 1, 1), 1);
}

// Rows 16 KiB apart, a line of each a step: L1's hints reach 4 rows (half
// of 8 ways) when the loop runs 4 times that; L2's, for runs shorter than
// prefetchers follow, the steps 200 ns take at 4 vector FMAs a nanosecond,
// when the loop runs 4 times that too. Every pass is hinted where a step
// reads more than L2 delivers in its FMAs' time (32 bytes an FMA here).
TEST(States, HintsReachAsFarAsTheLoopAndTheMissTheyCoverAsk) {
  CpuCaches caches;
  caches.vector_fmas_per_ns = 4;
  caches.l2_bytes_per_fma = 32;
  const HintReach far = hint_reach(4096, 16, 20, 1000, caches);
  EXPECT_EQ(far.l1_rows, 4);
  EXPECT_EQ(far.l2_rows, 40);
  EXPECT_FALSE(far.every_pass);
  const HintReach near = hint_reach(4096, 16, 20, 100, caches);
  EXPECT_EQ(near.l1_rows, 4);
  EXPECT_EQ(near.l2_rows, 0);
  EXPECT_EQ(hint_reach(4096, 16, 20, 15, caches).l1_rows, 0);
  const HintReach streamed = hint_reach(4096, 160, 20, 1000, caches);  // 640-byte runs
  EXPECT_EQ(streamed.l2_rows, 0);
  EXPECT_FALSE(streamed.every_pass);
  EXPECT_TRUE(hint_reach(4096, 160, 10, 1000, caches).every_pass);
}

// A packed operand the micro-kernel reads in vectors along the reduction
// (a dense layer's X, vectorized along K) keeps the reduction contiguous in
// its buffer: each vector is a load. With the register tile's elements
// innermost instead, every vector was a gather (a dense layer's M = 8 ran
// 3.8x slower packed than unpacked). Odd sizes; every kernel matches the
// reference.
TEST(States, PackedOperandsReadAlongAVectorizedReductionAreLoads) {
  const int checked = count_sampled_dense_states(
      detect_host_cpu(), {{"M", "13"}, {"N", "19"}, {"K", "83"}}, 5, 3,
      [](const State& s) {
        return s->pack[0] >= 0 && s->vec_axis == 2 && s->vec_width >= 4 && s->tile[s->reg_level()][0] >= 2;
      },
      [](const Kernel& k) {
        EXPECT_EQ(k.llvm_ir().find("masked.gather"), std::string::npos) << k.report().loop_ir;
        return true;
      });
  EXPECT_GE(checked, 2) << "too few sampled states pack X and vectorize along K";
}

TEST(StateDynamicShapes, TiledKernelServesEverySize) {
  Var M("M"), N("N"), K("K");
  Operator op = ops::dense(M, N, K, ops::Epilogue::Bias);
  CompileOptions options;
  options.strategy = "construct";
  Kernel kernel = compile(op, options);
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{1, 1, 1}, {7, 19, 300}, {65, 33, 64}, {300, 17, 5}}) {
    auto in = random_inputs(op, 2, sizes);
    std::vector<Buffer> out;
    for (const auto& s : output_shapes(op, in)) out.push_back(Buffer::allocate(s));
    kernel.run(in, out);
    EXPECT_TRUE(check_against_reference(op, in, out).ok) << sizes[0] << "," << sizes[1] << "," << sizes[2];
  }
}

// A pack above the outermost cache level's loop over a reduction axis of a
// size known only at run time would need an unbounded buffer: illegal, a
// cheap failure naming the axis, not an internal error when lowering. Inside
// that loop the same pack is legal and its kernel serves every size.
TEST(StateDynamicShapes, PackOverAnUnboundedReductionIsIllegal) {
  Var M("M"), N("N"), K("K");
  Operator op = ops::dense(M, N, K, ops::Epilogue::None);
  HwSpec hw = load_hwspec("haswell_avx2");
  Task task = make_task(op, hw, 1);
  const AnchorInfo& anchor = *task.anchor;
  const State s = initial_state(anchor, hw);
  const int k_pos = int(std::find(s->order[1].begin(), s->order[1].end(), 2) - s->order[1].begin());
  StepResult above = apply_step(*s, {StepKind::Pack, 1, s->make_pack_point(1, k_pos)}, anchor, hw);
  ASSERT_FALSE(above);
  EXPECT_NE(above.why().find("reduction axis 2"), std::string::npos) << above.why();
  StepResult inside = apply_step(*s, {StepKind::Pack, 1, s->make_pack_point(1, k_pos + 1)}, anchor, hw);
  ASSERT_TRUE(inside) << inside.why();
  Kernel kernel = compile_schedule(op, schedule_with_state(task, inside.state), hw, 1);
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{3, 5, 7}, {17, 9, 300}}) {
    auto in = random_inputs(op, 4, sizes);
    std::vector<Buffer> out;
    for (const auto& shape : output_shapes(op, in)) out.push_back(Buffer::allocate(shape));
    kernel.run(in, out);
    EXPECT_TRUE(check_against_reference(op, in, out).ok) << sizes[0] << "," << sizes[1] << "," << sizes[2];
  }
}

// Materializing a padded input: the producer runs as its own stage before
// the nest, which then reads it without a guard; construction's top states
// with it switched on, at odd sizes, strides and windows, match the
// reference. The stage tests the padding once a row where the rows are whole
// (channels innermost), and rows of 256 channels, 1 KB, are a line apart
// more in its buffer (scratch_row_pitch). A step on an input read without a
// guard is a cheap failure.
TEST(States, MaterializedPaddingIsReadWithoutGuards) {
  const std::vector<Case> padded = {
      {"conv2d", {{"N", "1"}, {"H", "9"}, {"W", "10"}, {"CI", "5"}, {"CO", "19"}, {"KH", "3"}, {"KW", "3"},
                  {"pad", "1"}}},
      {"conv2d", {{"N", "1"}, {"H", "13"}, {"W", "11"}, {"CI", "3"}, {"CO", "17"}, {"KH", "7"}, {"KW", "7"},
                  {"stride", "2"}, {"pad", "3"}}},
      {"depthwise_conv2d", {{"N", "1"}, {"H", "11"}, {"W", "9"}, {"C", "21"}, {"KH", "5"}, {"KW", "5"},
                            {"stride", "2"}, {"pad", "2"}}},
      {"pool2d", {{"N", "1"}, {"H", "12"}, {"W", "11"}, {"C", "18"}, {"KH", "3"}, {"KW", "3"}, {"stride", "2"},
                  {"pad", "1"}}},
      {"depthwise_conv2d", {{"N", "2"}, {"H", "5"}, {"W", "6"}, {"C", "256"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}},
      {"conv2d", {{"N", "1"}, {"H", "4"}, {"W", "5"}, {"CI", "256"}, {"CO", "7"}, {"KH", "3"}, {"KW", "3"},
                  {"pad", "1"}}},
  };
  HwSpec hw = load_hwspec("zen4_server");  // 64-byte lines, 64 sets, 8 ways: 1 KB rows are padded
  for (const Case& c : padded) {
    Operator op = make_operator(c.op, c.params);
    Task task = make_task(op, hw, 1);
    const AnchorInfo& anchor = *task.anchor;
    auto inputs = random_inputs(op, 7);
    TraversalOptions t;
    t.top_k = 3;
    t.walk_steps = 150;
    int materialized = 0;
    for (const RankedState& ranked : traverse_state_graph(anchor, hw, seed_states(anchor, hw), t).top)
      for (size_t i = 0; i < anchor.accesses.size(); ++i) {
        if (!anchor.accesses[i].guarded) continue;
        const Step on{StepKind::Materialize, int(i), 1};
        StepResult r = ranked.state->materialized(i) ? StepResult{ranked.state, {}}
                                                     : apply_step(*ranked.state, on, anchor, hw);
        ASSERT_TRUE(r) << c.op << ": " << r.why();
        ++materialized;
        const Schedule schedule = schedule_with_state(task, r.state);
        Kernel k = compile_schedule(op, schedule, hw, 1);
        EXPECT_TRUE(test::run_and_check(op, k, inputs).ok) << c.op << " " << r.state->str();
        // Only the materialized stage itself tests the padding, and only in
        // an `if` over its rows (its stores hold no select).
        const te::Tensor& stage = anchor.accesses[i].tensor;
        std::istringstream ir(k.report().loop_ir);
        for (std::string line; std::getline(ir, line);) {
          if (line.find(">=") != std::string::npos)
            EXPECT_TRUE(line.find("select(") == std::string::npos && line.find("if (") != std::string::npos)
                << c.op << " " << r.state->str() << ": " << line;
          if (line.find("allocate " + stage.name() + "[") != std::string::npos) {
            int64_t rows = 1;
            for (size_t d = 0; d + 1 < stage.shape().size(); ++d) rows *= *stage.shape()[d].as_const_int();
            const int64_t row = *stage.shape().back().as_const_int(), pitch = row == 256 ? 256 + 16 : row;
            EXPECT_NE(line.find("[" + std::to_string(rows * pitch) + "]"), std::string::npos) << c.op << ": " << line;
          }
        }
        // Undone, it reads through the guard again.
        StepResult back = apply_step(*r.state, {StepKind::Materialize, int(i), 0}, anchor, hw);
        ASSERT_TRUE(back);
        EXPECT_FALSE(back.state->materialized(i));
      }
    EXPECT_GT(materialized, 0) << c.op << ": no guarded input to materialize";
  }
  Operator matmul = make_operator("matmul", {{"M", "8"}, {"N", "8"}, {"K", "8"}});
  AnchorInfo plain = analyze_anchor(matmul);
  StepResult none = apply_step(*initial_state(plain, hw), {StepKind::Materialize, 0, 1}, plain, hw);
  EXPECT_FALSE(none);
  EXPECT_NE(none.why().find("reads no guarded producer"), std::string::npos) << none.why();
}

TEST(States, HashAndEqualityAreStructural) {
  Operator op = make_operator("matmul", {{"M", "64"}, {"N", "64"}, {"K", "64"}});
  HwSpec hw = detect_host_cpu();
  AnchorInfo anchor = analyze_anchor(op);
  State s0 = initial_state(anchor, hw);
  // Two paths to the same state: grow then shrink is the identity.
  StepResult a = apply_step(*s0, {StepKind::TileGrow, s0->reg_level(), 0}, anchor, hw);
  ASSERT_TRUE(a);
  StepResult b = apply_step(*a.state, {StepKind::TileShrink, s0->reg_level(), 0}, anchor, hw);
  ASSERT_TRUE(b);
  EXPECT_TRUE(*b.state == *s0);
  EXPECT_EQ(b.state->hash(), s0->hash());
  EXPECT_EQ(b.state->history().size(), 2u);
  EXPECT_FALSE(*a.state == *s0);
}

// CPU register tiles step one row (or one vector) at a time, whatever the
// extent's divisors; the cache tiles above move to the nearest multiple, the
// last tile of each level partial. Every stop matches the reference.
TEST(States, RegisterTilesStepByOneAndOuterTilesFollow) {
  Operator op = make_operator("matmul", {{"M", "100"}, {"N", "37"}, {"K", "19"}});
  HwSpec hw = load_hwspec("haswell_avx2");
  Task task = make_task(op, hw, 1);
  const AnchorInfo& anchor = *task.anchor;
  State s = apply_step(*initial_state(anchor, hw), {StepKind::Vectorize, 1, 8}, anchor, hw).state;
  ASSERT_TRUE(s);
  const int reg = s->reg_level();
  s = apply_step(*s, {StepKind::TileShrink, reg - 1, 0}, anchor, hw).state;  // a cache tile of 50 rows
  ASSERT_TRUE(s);
  ASSERT_EQ(s->tile[reg - 1][0], 50);
  const auto inputs = random_inputs(op, 5);
  for (int64_t rows = 2; rows <= 7; ++rows) {
    StepResult r = apply_step(*s, {StepKind::TileGrow, reg, 0}, anchor, hw);
    ASSERT_TRUE(r) << r.why();
    s = r.state;
    ASSERT_EQ(s->tile[reg][0], rows);
    EXPECT_EQ(check_legal(*s, anchor, hw), "");
    const int64_t cache = s->tile[reg - 1][0];
    EXPECT_EQ(cache % rows, 0) << s->str();
    EXPECT_LE(std::abs(cache - 50), rows / 2 + 1) << s->str();  // the nearest multiple of the register tile
    EXPECT_GE(s->tile[0][0], 100) << s->str();  // still one parallel tile over the whole axis
    EXPECT_TRUE(test::run_and_check(op, compile_schedule(op, schedule_with_state(task, s), hw, 1), inputs).ok)
        << s->str();
  }
  StepResult wider = apply_step(*s, {StepKind::TileGrow, reg, 1}, anchor, hw);  // 7 x 16: 14 accumulators + 3
  ASSERT_FALSE(wider);
  EXPECT_NE(wider.why().find("vector registers"), std::string::npos) << wider.why();
}

// A reduction whose length has sparse divisors (97 is prime) is still
// blocked at the outermost cache level, with a partial last block; that block
// is peeled, so the micro-kernel's reduction loop keeps a constant trip count
// in the others. Lengths with dense divisors, and a window's taps (11 is
// prime too), keep blocks that divide them.
TEST(States, ReductionsOfPrimeLengthAreBlockedWithAPartialLastBlock) {
  HwSpec hw = load_hwspec("haswell_avx2");
  auto reduction_state = [&](const Operator& op, int axis, const std::vector<StepKind>& shrink_then_grow) {
    const Task task = make_task(op, hw, 1);
    State s = initial_state(*task.anchor, hw);
    for (int level : {2, 1}) {  // the inner cache's tile shrinks once, then the outer cache's
      StepResult r = apply_step(*s, {shrink_then_grow[0], level, axis}, *task.anchor, hw);
      EXPECT_TRUE(r) << r.why();
      if (r) s = r.state;
    }
    for (size_t i = 1; i < shrink_then_grow.size(); ++i) {
      StepResult r = apply_step(*s, {shrink_then_grow[i], 2, axis}, *task.anchor, hw);
      EXPECT_TRUE(r) << r.why();
      if (r) s = r.state;
    }
    EXPECT_EQ(check_legal(*s, *task.anchor, hw), "") << s->str();
    return std::make_pair(task, s);
  };
  const StepKind shrink = StepKind::TileShrink, grow = StepKind::TileGrow;
  {
    const Operator op = make_operator("matmul", {{"M", "5"}, {"N", "37"}, {"K", "97"}});
    const auto [task, s] = reduction_state(op, 2, {shrink, grow, grow});
    EXPECT_EQ(s->tile[1][2], 52) << s->str();  // blocks of 52 (a divisor of 104): 97 = 52 + 45
    EXPECT_EQ(s->tile[0][2], 104) << s->str();
    EXPECT_EQ(s->tile[2][2], 4) << s->str();  // in steps of 4
    const Kernel k = compile_schedule(op, schedule_with_state(task, s), hw, 1);
    EXPECT_TRUE(test::run_and_check(op, k, random_inputs(op, 3)).ok) << s->str();
    const std::string& ir = k.report().loop_ir;
    EXPECT_NE(ir.find("for e_k in [0, 4)"), std::string::npos) << ir;
  }
  {
    const Operator op = make_operator("matmul", {{"M", "5"}, {"N", "37"}, {"K", "96"}});
    const auto [task, s] = reduction_state(op, 2, {shrink});
    EXPECT_EQ(s->tile[1][2], 48) << s->str();
    EXPECT_EQ(s->tile[0][2], 96) << s->str();
  }
  {
    const Operator op = make_operator("conv2d", {{"N", "1"}, {"H", "14"}, {"W", "3"}, {"CI", "4"}, {"CO", "8"},
                                                 {"KH", "11"}, {"KW", "2"}, {"pad", "5"}});
    const Task task = make_task(op, hw, 1);
    int rh = -1;
    for (int a = 0; a < task.anchor->num_axes(); ++a)
      if (task.anchor->axes[size_t(a)].name() == "rh") rh = a;
    ASSERT_GE(rh, 0);
    ASSERT_TRUE(task.anchor->is_window_tap(rh));
    const auto [tap_task, s] = reduction_state(op, rh, {shrink});
    EXPECT_EQ(s->tile[1][rh], 1) << s->str();  // 11's divisors: no partial block of taps
    EXPECT_EQ(s->tile[0][rh], 11) << s->str();
  }
}

// A loop that runs once (its tile covers its parent's) is the same program
// wherever it stands, so the traversal is offered no reorder that moves one;
// reorders of loops that run several times are still offered, and moving a
// loop that runs once (still a legal step) changes no result.
TEST(States, ReordersOfLoopsThatRunOnceAreNotCandidates) {
  Operator op = make_operator("conv2d", {{"N", "1"}, {"H", "9"}, {"W", "7"}, {"CI", "5"}, {"CO", "11"},
                                         {"KH", "3"}, {"KW", "3"}, {"pad", "1"}});
  HwSpec hw = load_hwspec("haswell_avx2");
  Task task = make_task(op, hw, 1);
  const AnchorInfo& anchor = *task.anchor;
  const auto inputs = random_inputs(op, 9);
  auto trips = [&](const State& s, int level, int axis) {
    const int64_t parent = level == 0 || (level == 1 && anchor.is_reduce_axis(axis)) ? anchor.plan_extent(axis)
                                                                                      : s->tile[level - 1][axis];
    return (parent + s->tile[level][axis] - 1) / s->tile[level][axis];
  };
  int offered = 0, moved_once = 0;
  for (const State& seed : seed_states(anchor, hw)) {
    for (const Step& step : candidate_steps(*seed, anchor, hw)) {
      if (step.kind != StepKind::Reorder) continue;
      ++offered;
      EXPECT_GT(trips(seed, step.a, seed->order[step.a][step.b]), 1) << step.str() << " on " << seed->str();
      EXPECT_GT(trips(seed, step.a, seed->order[step.a][step.b + 1]), 1) << step.str() << " on " << seed->str();
    }
    for (int l = 1; l < seed->levels(); ++l)
      for (int p = 0; p + 1 < int(seed->order[l].size()); ++p) {
        if (moved_once == 6 || (trips(seed, l, seed->order[l][p]) > 1 && trips(seed, l, seed->order[l][p + 1]) > 1))
          continue;
        StepResult r = apply_step(*seed, {StepKind::Reorder, l, p}, anchor, hw);
        ASSERT_TRUE(r) << r.why();
        ++moved_once;
        EXPECT_TRUE(test::run_and_check(op, compile_schedule(op, schedule_with_state(task, r.state), hw, 1), inputs).ok)
            << r.state->str();
      }
  }
  EXPECT_GT(offered, 0);  // the filter leaves the reorders that matter
  EXPECT_GT(moved_once, 0);
}

// A vector along an axis of one element (a GEMV's M) uses one lane: the
// scalar kernel under another name. Construction neither seeds nor offers
// it, and vectorizes the GEMV along N; the step itself stays legal (records
// that hold it replay), and both kernels match the reference.
// Goto's blocking of a seed (panel_variant): a micro-kernel call is one
// register tile over a reduction block whose broadcast operand (the one
// the vector axis does not move) fits in half of L1; the loop over the
// vector axis's tiles runs inside the loops over the other spatial axes;
// the vector operand is packed at the outer cache level, after its loops
// open. At awkward sizes, every such state computes what the reference does.
TEST(States, PanelBlockingKeepsTheBroadcastSliverInL1AndPacksTheStreamedPanel) {
  const std::vector<Operator> ops = {
      make_operator("dense", {{"M", "67"}, {"N", "45"}, {"K", "1031"}}),
      make_operator("matmul", {{"M", "37"}, {"N", "130"}, {"K", "517"}}),
      make_operator("conv2d", {{"N", "1"}, {"H", "9"}, {"W", "11"}, {"CI", "67"}, {"CO", "37"}, {"KH", "3"},
                               {"KW", "3"}, {"pad", "1"}})};
  int checked = 0;
  for (const char* spec : {"haswell_avx2", "zen4_server"}) {
    const HwSpec hw = load_hwspec(spec);
    const double l1 = double(hw.cpu.caches.front().size_bytes);
    for (const Operator& op : ops) {
      const Task task = make_task(op, hw, 1);
      const AnchorInfo& anchor = *task.anchor;
      const auto inputs = random_inputs(op, 3);
      for (const State& seed : seed_states(anchor, hw)) {
        const int v = seed->vec_axis;
        if (v < 0 || v >= anchor.num_spatial) continue;
        const State p = panel_variant(seed, anchor, hw);
        const int reg = p->reg_level(), inner = reg - 1;
        ASSERT_EQ(check_legal(*p, anchor, hw), "") << p->str();
        double sliver = 0;
        for (size_t i = 0; i < anchor.accesses.size(); ++i) {
          const Access& x = anchor.accesses[i];
          if (x.uses_axis[v]) {
            EXPECT_EQ(p->pack_level(p->pack[i]), inner - 1) << spec << ": " << p->str();
            continue;
          }
          sliver += 4 * x.data_tile(p->tile[inner]);
        }
        EXPECT_LE(sliver, l1 / 2) << spec << ": " << p->str();
        for (int a = 0; a < anchor.num_spatial; ++a) EXPECT_EQ(p->tile[inner][a], p->tile[reg][a]) << p->str();
        const auto order = p->order[inner];
        const size_t at = size_t(std::find(order.begin(), order.end(), v) - order.begin());
        EXPECT_EQ(at, size_t(anchor.num_spatial - 1)) << "the vector axis's loop follows the other spatial axes' in "
                                                       << p->str();
        EXPECT_TRUE(test::run_and_check(op, compile_schedule(op, schedule_with_state(task, p), hw, 1), inputs).ok)
            << spec << ": " << p->str();
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 6);
  // A depthwise convolution's operands all move along the channels: nothing to keep in L1 while another streams.
  const HwSpec hw = load_hwspec("zen4_server");
  const Task depthwise = make_task(make_operator("depthwise_conv2d", {{"N", "1"}, {"H", "9"}, {"W", "9"}, {"C", "37"},
                                                                      {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}), hw, 1);
  for (const State& seed : seed_states(*depthwise.anchor, hw))
    EXPECT_EQ(*panel_variant(seed, *depthwise.anchor, hw), *seed) << seed->str();
}

TEST(States, NoVectorAlongAnAxisOfOneElement) {
  HwSpec hw = load_hwspec("haswell_avx2");
  Operator op = make_operator("matmul", {{"M", "1"}, {"N", "45"}, {"K", "29"}});
  Task task = make_task(op, hw, 1);
  const AnchorInfo& anchor = *task.anchor;
  int vectorizes = 0;
  for (const State& seed : seed_states(anchor, hw)) {
    EXPECT_NE(seed->vec_axis, 0) << seed->str();
    for (const Step& step : candidate_steps(*seed, anchor, hw)) {
      if (step.kind != StepKind::Vectorize || step.b == 1) continue;
      ++vectorizes;
      EXPECT_NE(step.a, 0) << step.str() << " on " << seed->str();
    }
  }
  EXPECT_GT(vectorizes, 0);  // along N and K still
  const std::vector<RankedState> top = construct_states(task, 10, {});
  ASSERT_FALSE(top.empty());
  for (const RankedState& r : top) EXPECT_NE(r.state->vec_axis, 0) << r.state->str();
  const auto inputs = random_inputs(op, 5);
  EXPECT_TRUE(test::run_and_check(op, compile_schedule(op, schedule_with_state(task, top[0].state), hw, 1), inputs).ok);
  StepResult by_hand = apply_step(*initial_state(anchor, hw), {StepKind::Vectorize, 0, 8}, anchor, hw);
  ASSERT_TRUE(by_hand) << by_hand.why();
  const Kernel scalar = compile_schedule(op, schedule_with_state(task, by_hand.state), hw, 1);
  EXPECT_TRUE(test::run_and_check(op, scalar, inputs).ok);
}

// The model does not see unroll, so construction gives its CPU states a
// fixed one (4) rather than whatever the walk reached: every top state of a
// reduction carries it, they stay distinct, replay to themselves and match
// the reference; an operator with no reduction keeps none.
TEST(States, ConstructionUnrollsReductionsFourTimes) {
  HwSpec hw = load_hwspec("haswell_avx2");
  Operator op = make_operator("matmul", {{"M", "37"}, {"N", "45"}, {"K", "29"}});
  Task task = make_task(op, hw, 1);
  const std::vector<RankedState> top = construct_states(task, 10, {});
  ASSERT_EQ(top.size(), 10u);
  const auto inputs = random_inputs(op, 11);
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_EQ(top[i].state->unroll, 4) << top[i].state->str();
    EXPECT_TRUE(*replay(*task.anchor, hw, top[i].state->history()) == *top[i].state) << top[i].state->str();
    for (size_t j = 0; j < i; ++j) EXPECT_FALSE(*top[j].state == *top[i].state) << top[i].state->str();
  }
  EXPECT_TRUE(test::run_and_check(op, compile_schedule(op, schedule_with_state(task, top[0].state), hw, 1), inputs).ok);
  Task elementwise = make_task(make_operator("bias_add_relu", {{"M", "7"}, {"N", "19"}}), hw, 1);
  for (const RankedState& r : construct_states(elementwise, 3, {})) EXPECT_EQ(r.state->unroll, 1) << r.state->str();
}

// A window's few taps are unrolled whole whatever the state's factor (the
// model counts their copies so): a depthwise 3x3's innermost tap loop (kw)
// gets an unroll hint of its 3 taps at factors 1 and 2, and its own factor
// at 4 and 8.
TEST(States, AWindowsFewTapsAreUnrolledWhole) {
  HwSpec hw = load_hwspec("haswell_avx2");
  Operator op = make_operator("depthwise_conv2d", {{"N", "1"}, {"H", "9"}, {"W", "11"}, {"C", "21"}, {"KH", "3"},
                                                   {"KW", "3"}, {"stride", "1"}, {"pad", "1"}});
  Task task = make_task(op, hw, 1);
  const auto inputs = random_inputs(op, 5);
  for (auto [unroll, hint] : {std::pair{1, 3}, {2, 3}, {4, 4}, {8, 8}}) {
    std::string steps = "vectorize 3 8\ntile_grow 3 2\ntile_grow 3 2\n";
    if (unroll > 1) steps += "unroll " + std::to_string(unroll) + " 0\n";
    const State s = replay(*task.anchor, hw, parse_steps(steps));
    ASSERT_EQ(s->tile[s->reg_level()][2], 3) << s->str();
    const Kernel k = compile_schedule(op, schedule_with_state(task, s), hw, 1);
    EXPECT_TRUE(test::run_and_check(op, k, inputs).ok) << s->str();
    const std::string taps = "for e_" + task.anchor->axes[5].name() + " in [0, 3) unroll " + std::to_string(hint);
    EXPECT_NE(k.report().loop_ir.find(taps + ":\n"), std::string::npos) << s->str() << "\n" << k.report().loop_ir;
  }
  // The window's columns cut to one per micro-kernel call: its rows' loop
  // is now the innermost that runs, and takes the unroll (as the model's
  // unrolled_reduction assumes), not the loop of one column.
  const State s = replay(*task.anchor, hw, parse_steps("vectorize 3 8\ntile_grow 3 2\ntile_shrink 2 5\n"));
  ASSERT_EQ(s->tile[s->reg_level() - 1][5], 1) << s->str();
  const Kernel k = compile_schedule(op, schedule_with_state(task, s), hw, 1);
  EXPECT_TRUE(test::run_and_check(op, k, inputs).ok) << s->str();
  const std::string& ir = k.report().loop_ir;
  EXPECT_NE(ir.find("for e_" + task.anchor->axes[4].name() + " in [0, 3) unroll 3:\n"), std::string::npos)
      << s->str() << "\n" << ir;
  EXPECT_EQ(ir.find("for e_" + task.anchor->axes[5].name() + " in [0, 1) unroll"), std::string::npos) << ir;
}

// A register tile that reaches the padding runs a guarded micro-kernel in
// which each element skips the reduction steps that read only padding (the
// step would combine the identity: zero times a weight, or -inf into a
// max), by a branch outside its vector loop, not a select per vector. A row
// of 7 columns reaches both sides at every step of the edge columns' taps.
TEST(States, PaddedStepsAreSkippedNotCombined) {
  HwSpec hw = load_hwspec("haswell_avx2");
  const std::map<std::string, std::string> shape{{"N", "1"}, {"H", "5"},  {"W", "7"},      {"C", "19"},
                                                 {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}};
  for (const char* name : {"depthwise_conv2d", "pool2d"}) {
    Operator op = make_operator(name, shape);
    Task task = make_task(op, hw, 1);
    std::string steps = "vectorize 3 8\n";
    for (int i = 0; i < 6; ++i) steps += "tile_grow 3 2\n";
    const State s = replay(*task.anchor, hw, parse_steps(steps));
    ASSERT_EQ(s->tile[s->reg_level()][2], 7) << s->str();
    const Kernel k = compile_schedule(op, schedule_with_state(task, s), hw, 1);
    EXPECT_TRUE(test::run_and_check(op, k, random_inputs(op, 9)).ok) << name << " " << s->str();
    const std::string& ir = k.report().loop_ir;
    EXPECT_EQ(ir.find("select("), std::string::npos) << name << "\n" << ir;
    // An element's test reads its column and sits just outside its vector loop.
    const std::string column = "e_" + task.anchor->axes[2].name() + " + e_";
    const std::string vectors = "e_" + task.anchor->axes[3].name();
    int tests = 0;
    std::istringstream lines(ir);
    for (std::string line, next; std::getline(lines, line);) {
      if (line.find(" if (") == std::string::npos || line.find(column) == std::string::npos) continue;
      ASSERT_TRUE(std::getline(lines, next)) << ir;
      EXPECT_NE(next.find("for " + vectors), std::string::npos) << name << ": " << line << "\n" << next;
      ++tests;
    }
    EXPECT_GT(tests, 0) << name << "\n" << ir;
  }
}

// A depthwise convolution's packed input is a halo tile in the input's own
// coordinates: the rows and columns its outputs' windows cover, each input
// element once, not once per tap (im2col-style: 25 times at 5x5). Stride 2,
// odd sizes and a channel count no vector divides, so the tiles at the edges
// are cut short; every kernel matches the reference. A convolution's input,
// which the micro-kernel broadcasts, keeps the layout per plan axis.
TEST(States, DepthwisePacksAHaloTileOfItsInput) {
  HwSpec hw = load_hwspec("haswell_avx2");
  const Operator op = make_operator("depthwise_conv2d", {{"N", "1"}, {"H", "23"}, {"W", "21"}, {"C", "19"},
                                                         {"KH", "5"}, {"KW", "5"}, {"stride", "2"}, {"pad", "2"}});
  const Task task = make_task(op, hw, 1);
  const AnchorInfo& anchor = *task.anchor;
  ASSERT_EQ(anchor.accesses[0].tensor.name(), "X_pad");
  // Register tiles of 3 columns of 8 channels; the innermost cache tile 4
  // rows by 6 columns by 8 channels, its input packed where its loops open.
  std::string steps = "vectorize 3 8\ntile_grow 3 2\ntile_grow 3 2\n";
  for (int i = 0; i < 2; ++i) steps += "tile_shrink 2 1\n";
  steps += "tile_shrink 2 2\ntile_shrink 2 3\n";
  State s = replay(anchor, hw, parse_steps(steps));
  const int reg = s->reg_level();
  s = apply_step(*s, {StepKind::Pack, 0, s->make_pack_point(reg - 1, int(s->order[reg - 1].size()))}, anchor, hw).state;
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->packs_halo(anchor, 0)) << s->str();
  const int64_t rows = s->tile[reg - 1][1], cols = s->tile[reg - 1][2], channels = s->tile[reg - 1][3];
  ASSERT_EQ(s->tile[reg][2], 3) << s->str();
  ASSERT_TRUE(rows == 4 && cols == 6 && channels == 8) << s->str();
  const int64_t halo = ((rows - 1) * 2 + 5) * ((cols - 1) * 2 + 5) * channels;  // 11 x 15 x 8, not 4 x 6 x 8 x 25
  const Kernel k = compile_schedule(op, schedule_with_state(task, s), hw, 1);
  EXPECT_TRUE(test::run_and_check(op, k, random_inputs(op, 3)).ok) << s->str();
  const std::string& ir = k.report().loop_ir;
  EXPECT_NE(ir.find("allocate packed_X_pad[" + std::to_string(halo) + "]"), std::string::npos)
      << "a halo of " << rows << "x" << cols << " outputs' windows by " << channels << " channels in\n" << ir;

  const Operator conv = make_operator("conv2d", {{"N", "1"}, {"H", "9"}, {"W", "7"}, {"CI", "5"}, {"CO", "17"},
                                                 {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}});
  const Task conv_task = make_task(conv, hw, 1);
  State c = replay(*conv_task.anchor, hw, parse_steps("vectorize 3 8\n"));
  c = apply_step(*c, {StepKind::Pack, 0, c->make_pack_point(1, 0)}, *conv_task.anchor, hw).state;
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->packs_halo(*conv_task.anchor, 0)) << c->str();
}

// A case of a table of padded windows: its task, the state its steps replay
// to, and that state's kernel, checked against the reference.
struct WindowCase {
  Task task;
  State state;
  std::string what;  // the operator and the state, for messages
  std::string ir;    // the kernel's loop IR
};
WindowCase compile_window_case(const char* name, const std::map<std::string, std::string>& shape,
                               const std::string& steps, const HwSpec& hw, uint64_t seed) {
  const Operator op = make_operator(name, shape);
  WindowCase c{make_task(op, hw, 1), nullptr, "", ""};
  c.state = replay(*c.task.anchor, hw, parse_steps(steps));
  c.what = std::string(name) + " " + c.state->str();
  const Kernel k = compile_schedule(op, schedule_with_state(c.task, c.state), hw, 1);
  EXPECT_TRUE(test::run_and_check(op, k, random_inputs(op, seed)).ok) << c.what;
  c.ir = k.report().loop_ir;
  return c;
}

// A step that reads only padding for an element adds nothing to it: where
// the padded input comes from a buffer holding its padding (materialized or
// packed), the micro-kernel skips such taps instead of multiplying zeros.
// A register tile spanning the rows (its position fixed) unrolls the tap
// loops so that each element's test of its row and tap folds. Tiles of 2
// rows at run-time positions skip a row tap where neither row reads inside,
// and their peeled remainder, the last row at a fixed position, unrolls its
// taps. A tile of one column skips a column tap at run time. Every such
// kernel matches the reference, for a sum whose padding is zero and for a
// max pool whose padding is the lowest value.
TEST(States, ConvolutionsSkipTheTapsThatReadOnlyPadding) {
  HwSpec hw = load_hwspec("haswell_avx2");
  const std::map<std::string, std::string> conv{{"N", "1"},  {"H", "9"},  {"W", "7"},      {"CI", "5"}, {"CO", "19"},
                                                {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}};
  const std::map<std::string, std::string> pool{{"N", "1"},  {"H", "9"},  {"W", "11"},     {"C", "18"},
                                                {"KH", "3"}, {"KW", "3"}, {"stride", "2"}, {"pad", "1"}};
  struct Variant {
    const char* op;
    std::map<std::string, std::string> shape;
    std::string steps;
    bool whole_rows;
  };
  auto whole_rows = [](int rows) {  // a register tile spanning the rows, one column wide
    std::string steps = "vectorize 3 8\n";
    for (int i = 1; i < rows; ++i) steps += "tile_grow 3 1\n";
    return steps;
  };
  const std::string tiles = "vectorize 3 8\ntile_grow 3 1\ntile_grow 3 2\ntile_grow 3 2\n";  // 2 rows x 3 columns
  const std::vector<Variant> variants = {
      {"conv2d", conv, whole_rows(9) + "materialize 0 1\n", true},
      {"conv2d", conv, tiles + "materialize 0 1\n", false},
      {"conv2d", conv, tiles + "pack 0 15\n", false},
      {"pool2d", pool, whole_rows(5) + "materialize 0 1\n", true},
      {"pool2d", pool, tiles + "materialize 0 1\n", false},
  };
  for (const Variant& v : variants) {
    const WindowCase c = compile_window_case(v.op, v.shape, v.steps, hw, 7);
    const AnchorInfo& anchor = *c.task.anchor;
    const std::string& what = c.what;
    const std::string& ir = c.ir;
    ASSERT_FALSE(c.state->reads_through_guard(anchor, 0) && c.state->pack[0] < 0) << what;
    const std::string rh = "e_" + anchor.axes[size_t(anchor.num_spatial)].name();
    const std::string row = "e_" + anchor.axes[1].name();
    EXPECT_NE(ir.find("unrolled for " + rh + " "), std::string::npos) << what << "\n" << ir;
    // Tests of a row tap: per element (reading the row's element) or for a whole tile.
    bool per_element = false, per_tile = false;
    std::istringstream lines(ir);
    for (std::string line; std::getline(lines, line);) {
      if (line.find(" if (") == std::string::npos || line.find(rh) == std::string::npos) continue;
      (line.find(row) != std::string::npos ? per_element : per_tile) = true;
    }
    EXPECT_TRUE(v.whole_rows ? per_element : per_tile) << what << "\n" << ir;
  }
}

// Register tiles that reach the padding, along an axis whose taps the
// micro-kernel unrolls whole, are peeled out of the loop over the register
// tiles (their guards then fold) and the tiles between run in a loop of
// their own: 11 columns in tiles of 3 are the first tile, a loop of 2, and
// the last tile of 2. Along the rows, whose taps stay a loop, the tiles run
// in one loop. With the rows' taps innermost instead, the rows are peeled
// and the columns are not (3 whole tiles in a loop, the last peeled for
// its size). Every kernel, read in place through its guards,
// matches the reference: depthwise and pooling windows, strided, and a
// convolution whose input is broadcast.
TEST(States, BorderTilesArePeeledAlongAxesWhoseTapsUnrollWhole) {
  HwSpec hw = load_hwspec("haswell_avx2");
  const std::map<std::string, std::string> window{{"N", "1"},  {"H", "13"}, {"W", "11"},     {"C", "19"},
                                                  {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}};
  std::map<std::string, std::string> strided = window;
  strided["H"] = "25", strided["W"] = "21", strided["stride"] = "2";
  const std::map<std::string, std::string> conv{{"N", "1"},  {"H", "13"}, {"W", "11"},     {"CI", "5"}, {"CO", "19"},
                                                {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}};
  const std::string three_columns = "vectorize 3 8\ntile_grow 3 2\ntile_grow 3 2\n";
  struct Variant {
    const char* op;
    std::map<std::string, std::string> shape;
    std::string steps;
    int peeled_axis;  // the spatial axis whose border tiles are peeled
  };
  const std::vector<Variant> variants = {
      {"depthwise_conv2d", window, three_columns, 2},
      {"depthwise_conv2d", window, three_columns + "reorder 2 4\n", 1},
      {"pool2d", window, three_columns, 2},
      {"depthwise_conv2d", strided, three_columns, 2},
      {"conv2d", conv, three_columns + "reorder 2 5\n", 2},  // its columns' taps innermost, not its channels
  };
  for (const Variant& v : variants) {
    const WindowCase c = compile_window_case(v.op, v.shape, v.steps, hw, 5);
    const AnchorInfo& anchor = *c.task.anchor;
    const State& s = c.state;
    const std::string& what = c.what;
    const std::string& ir = c.ir;
    ASSERT_TRUE(s->reads_through_guard(anchor, 0) && s->pack[0] < 0) << what;
    const int reg = s->reg_level();
    ASSERT_EQ(s->tile[reg][2], 3) << what;
    for (int a : {1, 2}) {
      const int64_t extent = anchor.const_extent[size_t(a)], tile = s->tile[reg][a];
      const std::optional<BorderTiles> border = border_tiles(*s, anchor, a, 0, extent);
      ASSERT_EQ(border.has_value(), a == v.peeled_axis) << what << " axis " << a;
      // Else the whole tiles loop, a shorter last one peeled.
      const int64_t trips = border ? (extent + tile - 1) / tile - border->lead - border->trail : extent / tile;
      if (border) EXPECT_TRUE(border->lead >= 1 && border->trail >= 1) << what;
      const std::string loop = "for t" + std::to_string(reg) + "_" + anchor.axes[size_t(a)].name() + " in [0, ";
      EXPECT_NE(ir.find(loop + std::to_string(trips) + "):"), std::string::npos)
          << what << ": " << loop << trips << ")\n" << ir;
    }
  }
  // Taps of 7 padded by 3 put three tiles of one column at each end: more
  // than are peeled.
  std::map<std::string, std::string> wide = window;
  wide["KW"] = "7", wide["pad"] = "3";
  const Operator op = make_operator("depthwise_conv2d", wide);
  const Task task = make_task(op, hw, 1);
  const State s = replay(*task.anchor, hw, parse_steps("vectorize 3 8\n"));
  EXPECT_FALSE(border_tiles(*s, *task.anchor, 2, 0, 11).has_value()) << s->str();
}

// Roller builds its leaves' tiles directly and finds them a step path; the
// register steps to a tile of 4 vectors pass through 3, whose realignment
// would leave the cache tiles (64 and 256 columns) off the goal unless the
// registers move first. Its best leaf is blocked, and replays to itself.
TEST(States, RollerLeavesHaveStepPaths) {
  Operator op = make_operator("dense", {{"M", "688"}, {"N", "2304"}, {"K", "768"}});
  HwSpec hw = load_hwspec("haswell_avx2");
  Task task = make_task(op, hw, 1);
  const std::vector<State> leaves = roller_states(*task.anchor, hw, 1, 3);
  ASSERT_FALSE(leaves.empty());
  for (const State& s : leaves) {
    EXPECT_LT(s->tile[s->reg_level() - 1][1], 2304) << "an unblocked fallback: " << s->str();
    EXPECT_TRUE(*replay(*task.anchor, hw, s->history()) == *s) << s->str();
  }
}

TEST(States, IllegalStepsAreCheapFailuresNamingTheLimit) {
  Operator op = make_operator("matmul", {{"M", "256"}, {"N", "256"}, {"K", "256"}});
  HwSpec hw = load_hwspec("haswell_avx2");
  AnchorInfo anchor = analyze_anchor(op);
  State s = initial_state(anchor, hw);
  s = apply_step(*s, {StepKind::Vectorize, 1, 8}, anchor, hw).state;
  ASSERT_TRUE(s);
  StepResult r{s, ""};
  std::string why;
  for (int i = 0; i < 20 && r; ++i) {
    StepResult next = apply_step(*r.state, {StepKind::TileGrow, s->reg_level(), 0}, anchor, hw);
    if (!next) why = next.why();
    r = next;
  }
  EXPECT_NE(why.find("vector registers, hwspec has 16"), std::string::npos) << why;
  StepResult bad = apply_step(*s, {StepKind::Vectorize, 1, 32}, anchor, hw);
  EXPECT_FALSE(bad);
  EXPECT_NE(bad.why().find("power of two up to 8 lanes"), std::string::npos) << bad.why();
  EXPECT_FALSE(apply_step(*s, {StepKind::TileGrow, 0, 2}, anchor, hw));  // reductions are not split across threads
}

TEST(States, ParseRejectsCorruptRecords) {
  EXPECT_USER_ERROR(parse_steps("tile_grow 1\n"), "line 1");
  EXPECT_USER_ERROR(parse_steps("tile_grow 1 2\nwarp_speed 1 2\n"), "unknown step 'warp_speed'");
  EXPECT_USER_ERROR(parse_steps("tile_grow one 2\n"), "is not '<step> <int> <int>'");
  Operator op = make_operator("matmul", {{"M", "8"}, {"N", "8"}, {"K", "8"}});
  EXPECT_USER_ERROR(replay(analyze_anchor(op), detect_host_cpu(), parse_steps("reorder 9 9\n")), "cannot replay step 'reorder 9 9'");
}

}  // namespace
}  // namespace loom
