// The analytic model's reading of memory streams: reads in short runs
// scattered over rows (no prefetcher follows them) cost the spec's measured
// scattered bandwidth, long runs the streaming one; construction finds the
// streaming order where it pays.
#include <set>

#include "construct/analytic_model.h"
#include "construct/construct.h"
#include "construct/state_graph.h"
#include "loom/loom.h"
#include "schedule/task.h"
#include "test_util.h"

namespace loom {
namespace {

// A server core whose short scattered reads are `slowdown` times slower
// than streaming, from every level beyond L1 and from DRAM.
HwSpec spec_with_scatter(double slowdown) {
  HwSpec spec = load_hwspec("zen4_server");
  for (size_t i = 1; i < spec.cpu.caches.size(); ++i) {
    if (spec.cpu.caches[i].bandwidth_gbs <= 0) spec.cpu.caches[i].bandwidth_gbs = 100.0 / double(i);
    spec.cpu.caches[i].scattered_bandwidth_gbs = spec.cpu.caches[i].bandwidth_gbs / slowdown;
  }
  if (spec.cpu.dram_core_bandwidth_gbs <= 0) spec.cpu.dram_core_bandwidth_gbs = 20;
  spec.cpu.dram_core_scattered_bandwidth_gbs = spec.cpu.dram_core_bandwidth_gbs / slowdown;
  return spec;
}

// The same core with a 32 KiB L1 of `ways` ways: 8 (4 KiB a way) crowds
// sets that 64 do not. Its geometry alone: what crowding cost the core
// measured is left out (the tests that need it set it).
HwSpec with_l1_ways(int ways, double scatter_slowdown = 1) {
  HwSpec spec = spec_with_scatter(scatter_slowdown);
  spec.cpu.caches[0].size_bytes = 32 << 10;
  spec.cpu.caches[0].associativity = ways;
  spec.cpu.caches[0].crowded_set_cycles.clear();
  spec.cpu.caches[0].set_stream_cycles.clear();
  return spec;
}

// What L1 set conflicts cost a state: the penalty of the lines a step
// crowds into one set, and the refills of the lines its reduction steps
// crowd, which arrive while it computes (L1's traffic).
double conflict_cost(const Estimate& e) { return e.penalty_s + e.level_s[0]; }

State apply_all(const Task& task, const std::vector<std::string>& steps) {
  std::string text;
  for (const std::string& s : steps) text += s + "\n";
  return replay(*task.anchor, task.target, parse_steps(text));
}

// GEMV y = x B (M = 1) with B 64 MiB: a register tile of 128 columns (i)
// walking down all K rows of B per micro-kernel call, 512 bytes a row, or
// (ii) the innermost cache tile's reduction cut to 4 rows and ordered
// outside the columns, so each call reads 4 rows that the next call
// continues: long runs.
struct Gemv {
  Task task;
  State column_walk, streaming;
  explicit Gemv(const HwSpec& spec)
      : task(make_task(make_operator("matmul", {{"M", "1"}, {"N", "4096"}, {"K", "4096"}}), spec, 1)) {
    std::vector<std::string> steps = {"vectorize 1 16"};
    steps.insert(steps.end(), 7, "tile_grow 3 1");  // 8 vectors
    column_walk = apply_all(task, steps);
    EXPECT_EQ(column_walk->reg_level(), 3) << "levels: parallel, L2, L1, registers";
    EXPECT_EQ(column_walk->tile[3][1], 128);
    steps.push_back("reorder 2 1");
    for (int i = 0; i < 10; ++i) steps.push_back("tile_shrink 2 2");
    streaming = apply_all(task, steps);
    EXPECT_EQ(streaming->tile[2][2], 4);
  }
  double seconds(const State& s) const { return estimate(*task.anchor, *s, task.target, 1).seconds; }
};

// On 16 vector registers of 8 lanes, the register blocks that hold most
// accumulators (6x16 or 4x24: 12, with 3 or 4 operand registers) are not
// powers of two; construction reaches one from its seeds, whose blocks are
// chosen by the model rather than grown by doubling to 8x8 (8 accumulators).
TEST(AnalyticModel, ConstructionFillsTheRegisterFile) {
  const HwSpec spec = load_hwspec("haswell_avx2");
  ASSERT_EQ(spec.cpu.vector_registers, 16);
  const Task task = make_task(make_operator("matmul", {{"M", "1024"}, {"N", "1024"}, {"K", "1024"}}), spec, 1);
  const std::vector<RankedState> top = construct_states(task, 1, {});
  ASSERT_FALSE(top.empty());
  const StateData& s = *top[0].state;
  const int reg = s.reg_level();
  ASSERT_EQ(s.vec_axis, 1) << s.str();
  EXPECT_GE(s.tile[reg][0] * s.tile[reg][1] / s.vec_width, 12) << s.str();
  EXPECT_EQ(check_legal(s, *task.anchor, spec), "");
}

// A construction's memo gives each state the model's time, the same for
// equal states built apart (the sweeps reach one state along several paths).
TEST(AnalyticModel, EstimateMemoGivesEqualStatesTheModelsTime) {
  const HwSpec spec = load_hwspec("zen4_server");
  const Task task = make_task(make_operator("matmul", {{"M", "96"}, {"N", "80"}, {"K", "64"}}), spec, 1);
  EstimateMemo memo(*task.anchor, spec, 1);
  const std::vector<std::vector<std::string>> paths = {{"vectorize 1 16", "tile_grow 3 0", "tile_grow 3 1"},
                                                       {"vectorize 1 16", "tile_grow 3 1", "tile_grow 3 0"},
                                                       {"vectorize 1 16", "tile_grow 3 0"}};
  std::vector<double> seconds;
  for (const auto& path : paths) {
    const State s = apply_all(task, path);
    seconds.push_back(memo.seconds(s));
    EXPECT_EQ(seconds.back(), estimate(*task.anchor, *s, spec, 1).seconds) << s->str();
  }
  EXPECT_EQ(*apply_all(task, paths[0]), *apply_all(task, paths[1]));
  EXPECT_EQ(seconds[0], seconds[1]);
  EXPECT_NE(seconds[0], seconds[2]);
}

// The walk moves a register block one row or vector at a time, and the
// blocks between two good ones (8x8 and 6x16) hide the FMA latency worse
// than either, so it rarely crosses them; construction then sweeps the
// register blocks of its best states. Its pick is the best register block
// for its own cache tiles, whatever the walk's seed.
TEST(AnalyticModel, ConstructionsPickHasTheBestRegisterBlockForItsCacheTiles) {
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> ops = {
      {"matmul", {{"M", "1024"}, {"N", "1024"}, {"K", "1024"}}},
      {"matmul", {{"M", "688"}, {"N", "2304"}, {"K", "768"}}},
      {"conv2d", {{"N", "1"}, {"H", "7"}, {"W", "7"}, {"CI", "512"}, {"CO", "2048"}, {"KH", "1"}, {"KW", "1"}}}};
  for (const char* spec_name : {"haswell_avx2", "zen4_server"})
    for (const auto& [name, params] : ops)
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        const HwSpec spec = load_hwspec(spec_name);
        const Task task = make_task(make_operator(name, params), spec, 1);
        ConstructOptions options;
        options.seed = seed;
        const std::vector<RankedState> top = construct_states(task, 1, options);
        ASSERT_FALSE(top.empty());
        EstimateMemo memo(*task.anchor, spec, 1);
        const State better = best_register_block(top[0].state, memo);
        EXPECT_LE(top[0].estimate.seconds, estimate(*task.anchor, *better, spec, 1).seconds)
            << spec_name << " " << name << " seed " << seed << ": " << top[0].state->str() << "\n"
            << better->str();
      }
}

// A convolution's input is broadcast across the lanes (they run along the
// output channels), and how a register block spreads over the rows and
// columns of pixels and the channels sets what each step loads: 3 rows by
// 7 vectors, 3 broadcasts of the input and 7 vectors of weights for 21
// FMAs; a column of 7 pixels by 3 vectors, 7 and 3 (on one Zen 4 core,
// 1.1-1.2x faster on 7x7 512->512). Construction's pick is the best
// block for its cache tiles among all those that grow and shrink along the
// pixels' rows, columns and the channels, not just the widest axis and the
// vector one (sweeping those two, 5 of these 30 picks were not: on the
// Zen 5, Sapphire Rapids and Haswell specs).
TEST(AnalyticModel, ConvolutionsRegisterBlockIsTheBestAlongEveryPixelAxis) {
  const std::vector<std::pair<std::string, std::string>> sizes = {{"7", "512"}, {"14", "256"}};
  for (const char* name : {"zen4_server", "zen5_server", "sapphire_rapids", "skylake_avx512", "haswell_avx2"}) {
    const HwSpec spec = load_hwspec(name);
    for (const auto& [hw, c] : sizes) {
      const Operator op = make_operator(
          "conv2d", {{"N", "1"}, {"H", hw}, {"W", hw}, {"CI", c}, {"CO", c}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}});
      const Task task = make_task(op, spec, 1);
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        ConstructOptions options;
        options.seed = seed;
        const std::vector<RankedState> top = construct_states(task, 1, options);
        ASSERT_FALSE(top.empty());
        const State pick = top[0].state;
        const int reg = pick->reg_level();
        std::vector<State> frontier{pick};
        std::set<std::vector<int64_t>> seen{pick->tile.row(reg)};
        while (!frontier.empty()) {
          const State at = frontier.back();
          frontier.pop_back();
          for (int a = 0; a < task.anchor->num_spatial; ++a)
            for (StepKind kind : {StepKind::TileGrow, StepKind::TileShrink}) {
              const StepResult r = apply_step(*at, {kind, reg, a}, *task.anchor, spec);
              if (!r || !seen.insert(r.state->tile.row(reg)).second) continue;
              frontier.push_back(r.state);
              EXPECT_LE(top[0].estimate.seconds, estimate(*task.anchor, *r.state, spec, 1).seconds * (1 + 1e-4))
                  << name << " " << hw << "x" << hw << " seed " << seed << ": " << pick->str() << "\n"
                  << r.state->str();
            }
        }
      }
    }
  }
}

// Which axis the lanes run along splits the state graph into basins that
// few steps cross, and the walk's best states often lie in one: a dense
// layer's dot products (lanes along K) against its outer products (lanes
// along N, the weights packed), 1.4x apart once polished. Construction
// polishes the best state of each vector axis too, so its pick does not
// depend on which basin the walk's seed wandered into. The spec is an
// Intel Xeon core measured by detection (KVM, 2 FMA units, 48 KiB L1 and
// 2 MiB L2), where seeds 1 and 3 ended on dot products.
TEST(AnalyticModel, ConstructionPolishesTheBestStateOfEveryVectorAxis) {
  const HwSpec spec = parse_hwspec_yaml(R"(name: xeon_kvm
kind: cpu
cpu:
  cores: 2
  frequency_ghz: 3.79
  vector_bits: 512
  fma_units: 2
  fma_latency: 4
  vector_registers: 32
  peak_gflops_per_core: 229.9
  dram_bandwidth_gbs: 40
  dram_core_bandwidth_gbs: 15.7
  dram_core_scattered_bandwidth_gbs: 8.97
  load_bytes_per_cycle: 88
  broadcast_fma_cycles: 0.613
  isa: [sse4.2, avx2, fma, avx512f]
  caches:
    - {name: L1d, size: 49152, line_bytes: 64, associativity: 12, bandwidth_gbs: 336.6,
       crowded_set_cycles: [0.38, 0.45, 0.5, 0.5]}
    - {name: L2, size: 2097152, line_bytes: 64, associativity: 16, bandwidth_gbs: 158.8,
       scattered_bandwidth_gbs: 143.5}
    - {name: L3, size: 503316480, line_bytes: 64, associativity: 16, shared_by_cores: 2, bandwidth_gbs: 29.76,
       scattered_bandwidth_gbs: 29.76}
)", "test");
  const Task task = make_task(make_operator("dense", {{"M", "2048"}, {"N", "3072"}, {"K", "768"}}), spec, 1);
  std::vector<double> picks;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    ConstructOptions options;
    options.seed = seed;
    const std::vector<RankedState> top = construct_states(task, 1, options);
    ASSERT_FALSE(top.empty());
    picks.push_back(top[0].estimate.seconds);
  }
  const auto [best, worst] = std::minmax_element(picks.begin(), picks.end());
  EXPECT_LT(*worst, 1.05 * *best) << "picks " << testing::PrintToString(picks);
}

// A GEMM like a 1x1 convolution of 7x7 pixels (49 x 512 x 2048) whose B
// panel, packed per L1 tile, already fills L1 at 32 reduction steps by 256
// columns: the micro-kernel reloads its accumulators every 32 steps. No
// single step lengthens the reduction block (the panel would overflow) but
// a trade does: fewer columns, more steps. Descent ends where no step gains.
TEST(AnalyticModel, DescentTradesColumnsForALongerReductionBlock) {
  for (const char* spec_name : {"haswell_avx2", "zen4_server"}) {
    const HwSpec spec = load_hwspec(spec_name);
    const Task task = make_task(make_operator("matmul", {{"M", "49"}, {"N", "512"}, {"K", "2048"}}), spec, 1);
    std::vector<std::string> steps = {"vectorize 1 8", "tile_grow 3 1"};
    steps.insert(steps.end(), 4, "tile_grow 3 0");  // 5 rows x 2 vectors
    while (apply_all(task, steps)->tile[2][2] > 32) steps.push_back("tile_shrink 2 2");
    steps.push_back("tile_shrink 2 1");  // 256 columns
    steps.push_back("pack 1 11");        // B, at the L1 tile's innermost point
    const State start = apply_all(task, steps);
    ASSERT_EQ(start->tile[2][1] * 1000 + start->tile[2][2], 256 * 1000 + 32) << start->str();
    EstimateMemo memo(*task.anchor, spec, 1);
    const State end = descend(start, memo);
    const double seconds = estimate(*task.anchor, *end, spec, 1).seconds;
    EXPECT_LT(seconds, estimate(*task.anchor, *start, spec, 1).seconds) << spec_name;
    EXPECT_GT(end->tile[2][2], 32) << spec_name << ": " << end->str();
    EXPECT_EQ(check_legal(*end, *task.anchor, spec), "");
    for (const Step& step : candidate_steps(*end, *task.anchor, spec)) {
      const bool parallel_tile = (step.kind == StepKind::TileGrow || step.kind == StepKind::TileShrink) && step.a == 0;
      if (StepResult r = apply_step(*end, step, *task.anchor, spec); r && !parallel_tile)
        EXPECT_GE(estimate(*task.anchor, *r.state, spec, 1).seconds, seconds) << spec_name << ": " << step.str();
    }
  }
}

TEST(AnalyticModel, ShortScatteredRunsCostTheScatteredBandwidth) {
  const Gemv slow(spec_with_scatter(4)), flat(spec_with_scatter(1));
  // Streaming wins clearly where scattered reads are slow, and the column
  // walk gains nothing from a spec that says they are not.
  EXPECT_LT(slow.seconds(slow.streaming) * 1.5, slow.seconds(slow.column_walk))
      << estimate(*slow.task.anchor, *slow.streaming, slow.task.target, 1).str() << "\n"
      << estimate(*slow.task.anchor, *slow.column_walk, slow.task.target, 1).str();
  EXPECT_GT(slow.seconds(slow.column_walk), 2 * flat.seconds(flat.column_walk));
  EXPECT_LT(slow.seconds(slow.streaming), 1.5 * flat.seconds(flat.streaming));
}

TEST(AnalyticModel, DemandRunsShorterThanTheProbesPayItsCostPerRun) {
  // The GEMV's column walk with 1 vector (64-byte runs down B's rows) and
  // with 8 (512-byte runs): the same bytes from DRAM, all demand misses.
  // Where scattered reads cost 4x streaming ones, a 64-byte run pays the
  // per-run cost a 256-byte probe run pays, for a quarter of the bytes:
  // (3 + 0.25) / 1 = 3.25x the 512-byte runs' time per byte. Where they cost
  // the same, there is no per-run cost and run length does not matter.
  for (double slowdown : {4.0, 1.0}) {
    const Gemv g(spec_with_scatter(slowdown));
    const State narrow = apply_all(g.task, {"vectorize 1 16"});
    ASSERT_EQ(narrow->tile[3][1], 16) << narrow->str();
    const Estimate a = estimate(*g.task.anchor, *narrow, g.task.target, 1);
    const Estimate b = estimate(*g.task.anchor, *g.column_walk, g.task.target, 1);
    const int dram = a.caches - 1;  // the last cache, filled from DRAM
    EXPECT_NEAR(a.level_s[dram] / b.level_s[dram], slowdown > 1 ? 3.25 : 1.0, 0.05) << a.str() << "\n" << b.str();
  }
}

TEST(AnalyticModel, DemandRunsFromACachePayNoCostPerRun) {
  // The same two column walks over a B that fits L2 (1 x 1000 x 200, rows
  // 4000 bytes apart, spread over L1's sets): L1 refills them from L2,
  // whose misses the out-of-order window overlaps. Their time per byte is
  // the same whatever the scattered reads' slowdown.
  auto ratio = [](double slowdown) {
    const HwSpec spec = spec_with_scatter(slowdown);
    const Task task = make_task(make_operator("matmul", {{"M", "1"}, {"N", "1000"}, {"K", "200"}}), spec, 1);
    std::vector<std::string> steps = {"vectorize 1 16"};
    const State narrow = apply_all(task, steps);
    steps.insert(steps.end(), 7, "tile_grow 3 1");  // 8 vectors
    const State wide = apply_all(task, steps);
    EXPECT_EQ(narrow->tile[3][1] * 1000 + wide->tile[3][1], 16128) << narrow->str() << "\n" << wide->str();
    const Estimate a = estimate(*task.anchor, *narrow, spec, 1), b = estimate(*task.anchor, *wide, spec, 1);
    EXPECT_GT(a.level_s[0], 0) << a.str();
    return a.level_s[0] / b.level_s[0];
  };
  EXPECT_NEAR(ratio(4), ratio(1), 0.01);
}

// A GEMM's register tile (8 rows, 48 columns) reads B in 192-byte runs, a
// row of 771 floats apart: too short for a stream prefetcher. Walking all K
// rows per micro-kernel call, each load steps by one row thousands of times
// (a stride prefetcher's pattern) and overlaps the FMAs; with the call's
// reduction cut to 8 rows, unrolled by 4, each load runs twice before the
// call moves on, and the misses from L3 (B is 12 MiB) stall the core: their
// time is added to the overlapped estimate, not hidden under it.
TEST(AnalyticModel, FarDemandMissesNoPrefetcherFollowsStallTheCore) {
  Task task = make_task(make_operator("matmul", {{"M", "37"}, {"N", "771"}, {"K", "4096"}}), spec_with_scatter(2), 1);
  std::vector<std::string> steps = {"vectorize 1 16", "unroll 4 0"};
  steps.insert(steps.end(), 7, "tile_grow 3 0");
  steps.insert(steps.end(), 2, "tile_grow 3 1");
  const State followed = apply_all(task, steps);
  steps.insert(steps.end(), 9, "tile_shrink 2 2");
  const State cut = apply_all(task, steps);
  ASSERT_EQ(followed->tile[3][0], 8);
  ASSERT_EQ(followed->tile[3][1], 48);
  ASSERT_EQ(cut->tile[2][2], 8) << cut->str();
  const Estimate a = estimate(*task.anchor, *followed, task.target, 1);
  const Estimate b = estimate(*task.anchor, *cut, task.target, 1);
  for (int i = 0; i < a.caches; ++i) EXPECT_EQ(a.stall_s[i], 0) << a.str();
  EXPECT_EQ(b.stall_s[0], 0) << "L1 is filled from the private L2: " << b.str();
  double stall = 0;
  for (int i = 1; i < b.caches; ++i) {
    EXPECT_GT(b.stall_s[i], 0) << "filled from L3 or memory: " << b.str();
    EXPECT_LE(b.stall_s[i], b.level_s[i]) << b.str();
    stall += b.stall_s[i];
  }
  EXPECT_GT(stall, 0.2 * b.compute_s) << b.str();
  EXPECT_GT(b.seconds, b.compute_s + stall) << b.str();
}

// Micro-kernels ask ahead for the first pass over an operand read in place
// with gaps between rows, far enough to cover a miss to memory
// (schedule/prefetch_hints.h): its misses overlap the FMAs, and only the
// passes after it stall. A 20x16 tile walking all of K reads B's rows, 16
// KiB apart (no prefetcher follows them), once over M = 20 and twice over
// M = 40; with the call's reduction cut short, the loop is too short for
// hints, and even one pass stalls.
TEST(AnalyticModel, OnlyPassesAfterAHintedFirstOneStall) {
  auto stall = [](int64_t m, int cuts) {
    const Task task = make_task(make_operator("matmul", {{"M", std::to_string(m)}, {"N", "4096"}, {"K", "1000"}}),
                                spec_with_scatter(2), 1);
    std::vector<std::string> steps = {"vectorize 1 16"};
    steps.insert(steps.end(), 19, "tile_grow 3 0");
    steps.insert(steps.end(), size_t(cuts), "tile_shrink 2 2");
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][0] * 100 + s->tile[3][1], 2016) << s->str();
    EXPECT_EQ(s->tile[2][2], cuts ? 8 : 1000) << s->str();
    const Estimate e = estimate(*task.anchor, *s, task.target, 1);
    double stalled = 0;
    for (int i = 0; i < e.caches; ++i) stalled += e.stall_s[i];
    return stalled;
  };
  EXPECT_EQ(stall(20, 0), 0.0);
  EXPECT_GT(stall(40, 0), 0.0);
  EXPECT_GT(stall(20, 11), 0.0);
}

TEST(AnalyticModel, ConstructionFindsTheStreamingOrder) {
  const Gemv g(spec_with_scatter(4));
  const std::vector<RankedState> top = construct_states(g.task, 1, {});
  ASSERT_FALSE(top.empty());
  EXPECT_LE(top[0].estimate.seconds, 1.01 * g.seconds(g.streaming)) << top[0].state->str();
}

TEST(AnalyticModel, TilesLargerThanAShortAxisClaimNoReuse) {
  // M = 1 with a cache tile of 16 rows: still one row, and B's traffic is
  // the same as with a tile of one row.
  const Gemv g(spec_with_scatter(4));
  // (Roller's tree builds such tiles directly: steps never grow a tile
  // past its axis.)
  // With the row loop innermost, a 16-row tile would claim B reused 16 times.
  State narrow = g.column_walk;
  if (narrow->order[3][1] != 0)
    narrow = apply_step(*narrow, {StepKind::Reorder, 3, 0}, *g.task.anchor, g.task.target).state;
  ASSERT_TRUE(narrow && narrow->order[3][1] == 0);
  auto wide_data = std::make_shared<StateData>(*narrow);
  for (int l = 0; l < wide_data->reg_level(); ++l) wide_data->tile[l][0] = 16;
  ASSERT_EQ(check_legal(*wide_data, *g.task.anchor, g.task.target), "");
  const State wide = wide_data;
  const Estimate a = estimate(*g.task.anchor, *narrow, g.task.target, 1);
  const Estimate b = estimate(*g.task.anchor, *wide, g.task.target, 1);
  for (int i = 0; i < a.caches; ++i) EXPECT_NEAR(b.level_s[i], a.level_s[i], 1e-3 * a.level_s[i] + 1e-12) << i;
}

// The parallel loop deals level-0 tiles to threads in contiguous chunks of
// equal counts, and a thread's share of the time is its tiles' points: the
// last tile along an axis holds only what the others leave. N = 1000 columns
// in tiles of 512 (512 + 488) split evenly over two threads; in tiles of 480
// (480 + 480 + 40), one thread has 960 of them; in one tile, one thread has
// them all.
TEST(AnalyticModel, ParallelBalanceWeighsEachTilesPoints) {
  const Task task =
      make_task(make_operator("matmul", {{"M", "37"}, {"N", "1000"}, {"K", "1000"}}), load_hwspec("zen4_server"), 2);
  const State columns_of_32 = apply_all(task, {"vectorize 1 16", "tile_grow 3 1"});
  auto balance = [&](int64_t columns, int threads) {
    auto data = std::make_shared<StateData>(*columns_of_32);
    for (int l = 0; l < data->reg_level(); ++l) {
      data->tile[l][0] = 37;
      data->tile[l][1] = columns;
    }
    EXPECT_EQ(check_legal(*data, *task.anchor, task.target), "") << columns;
    return estimate(*task.anchor, *data, task.target, threads).balance;
  };
  EXPECT_NEAR(balance(512, 2), 1000.0 / (2 * 512), 1e-12);
  EXPECT_NEAR(balance(480, 2), 1000.0 / (2 * 960), 1e-12);
  EXPECT_NEAR(balance(1024, 2), 0.5, 1e-12);
  EXPECT_NEAR(balance(480, 3), 1000.0 / (3 * 480), 1e-12);
  EXPECT_EQ(balance(480, 1), 1.0);
}

TEST(AnalyticModel, L1SetConflictsCountTheWholeRegisterTile) {
  // A 1x1 stride-2 convolution in NHWC with 512 channels: window positions
  // 4 KiB apart along a row, rows 224 KiB apart. On a 32 KiB 8-way L1 (4 KiB
  // per way) all of them fall into one set: 7 columns alone fit, 7 columns x
  // 4 rows (28 lines a set) do not, though neither axis alone crowds a set.
  const HwSpec eight_way = with_l1_ways(8), wide = with_l1_ways(64);
  const Operator op = make_operator("conv2d", {{"N", "1"}, {"H", "56"}, {"W", "56"}, {"CI", "512"}, {"CO", "128"},
                                               {"KH", "1"}, {"KW", "1"}, {"stride", "2"}, {"pad", "0"}});
  const Task task = make_task(op, eight_way, 1);
  ASSERT_EQ(task.anchor->num_spatial, 3);  // [n oh, ow, co]: one image, its rows and n merged (collapse_axes.h)
  auto penalty = [&](const State& s, const HwSpec& spec) { return conflict_cost(estimate(*task.anchor, *s, spec, 1)); };
  std::vector<std::string> steps = {"vectorize 2 16"};
  steps.insert(steps.end(), 6, "tile_grow 3 1");  // 7 columns
  const State columns = apply_all(task, steps);
  ASSERT_EQ(columns->tile[3][1], 7);
  steps.insert(steps.end(), 3, "tile_grow 3 0");  // 4 rows
  const State block = apply_all(task, steps);
  ASSERT_EQ(block->tile[3][0], 4);
  EXPECT_NEAR(penalty(columns, eight_way), penalty(columns, wide), 1e-12);
  EXPECT_GT(penalty(block, eight_way), 2 * penalty(block, wide));
}

TEST(AnalyticModel, RowsFillingAnL1SetPayWhatTheHostMeasured) {
  // C = A B with A read in place, its rows 4 KiB apart (K = 1024): a
  // register tile of R rows puts R lines into one set of a 32 KiB 8-way L1
  // every step. With 8 rows the set is full: free unless the spec measured
  // a cost there; with 9 it thrashes, every line refilled from L2, which
  // costs more the slower L2 is, or what the spec measured if that is more.
  // The reduction is cut to 64 steps a call, so that B's lines stay in L1.
  const Task task = make_task(make_operator("matmul", {{"M", "360"}, {"N", "64"}, {"K", "1024"}}), with_l1_ways(8), 1);
  auto block = [&](int rows) {
    std::vector<std::string> steps = {"vectorize 1 16", "tile_grow 3 1"};
    steps.insert(steps.end(), 4, "tile_shrink 2 2");
    steps.insert(steps.end(), rows - 1, "tile_grow 3 0");
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][0] * 100 + s->tile[3][1], rows * 100 + 32) << s->str();
    EXPECT_EQ(s->tile[2][2], 64) << s->str();
    return s;
  };
  auto penalty = [&](const State& s, const std::vector<double>& measured, double l2_gbs) {
    HwSpec spec = with_l1_ways(8);
    spec.cpu.caches[0].crowded_set_cycles = measured;
    spec.cpu.caches[1].bandwidth_gbs = l2_gbs;
    return estimate(*task.anchor, *s, spec, 1).penalty_s;
  };
  const State full = block(8), over = block(9);
  const double steps = 360.0 * 64 * 1024 / (8 * 32), freq_hz = with_l1_ways(8).cpu.frequency_ghz * 1e9;
  EXPECT_NEAR(penalty(full, {2.0}, 100) - penalty(full, {}, 100), steps * 2.0 / freq_hz, 1e-9);
  EXPECT_NEAR(penalty(full, {0, 0}, 100), penalty(full, {}, 100), 1e-12);
  EXPECT_GT(penalty(over, {}, 50), penalty(over, {}, 100) * 1.2);
  // Past its last entry a measured table follows its last slope: 10 lines
  // against a table of 0 and 1000 cycles a step for 8 and 9: 2000 cycles.
  const State ten = block(10);
  EXPECT_NEAR(penalty(ten, {0, 1000.0}, 0) - penalty(ten, {}, 0), (2000.0 - 10 * 64 / 16.0) * steps * 8 / 10 / freq_hz,
              1e-9);
}

TEST(AnalyticModel, RowsAPowerOfTwoApartStayOnlyInTheSetsTheyMapTo) {
  // C = A B, register tile 4 x 24, swept down 512 rows of A and C per L2
  // tile (k = 64). With A's rows 4 KiB apart, on huge pages, an L2 of 32 KiB
  // ways puts them in an eighth of its sets, 64 lines a set: with 48 ways
  // they come from L3 again on every sweep, where a fully associative L2 of
  // the same size holds them. Filling every way of its sets is enough (the
  // block's other accesses pass through them too): 64 ways lose them as
  // well, 96 keep them (measured, matmul 1024^3 on a 16-way 2 MiB L2: a B
  // panel of 512 rows 4 KiB apart, 16 lines a set, ran 1.4x the time of the
  // same micro-kernel on 64-row panels).
  auto l2_seconds = [](int64_t n, int64_t k, int ways, int64_t way_bytes) -> double {
    HwSpec spec = load_hwspec("haswell_avx2");
    EXPECT_EQ(spec.cpu.caches.at(1).size_bytes, 256 << 10);
    spec.cpu.caches[1].associativity = ways;
    spec.cpu.caches[1].size_bytes = ways * way_bytes;
    const Task task = make_task(make_operator("matmul", {{"M", "2048"}, {"N", std::to_string(n)},
                                                         {"K", std::to_string(k)}}), spec, 1);
    std::vector<std::string> steps = {"vectorize 1 8", "tile_grow 3 1", "tile_grow 3 1"};
    steps.insert(steps.end(), 3, "tile_grow 3 0");
    steps.insert(steps.end(), 6, "tile_shrink 2 2");
    steps.insert(steps.end(), {"tile_shrink 2 0", "tile_shrink 2 0", "reorder 2 1", "reorder 3 0"});
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][0] * 100 + s->tile[3][1], 424) << s->str();
    EXPECT_EQ(s->tile[2][0], 512) << s->str();
    return estimate(*task.anchor, *s, spec, 1).level_s[1];
  };
  auto fully_associative = [&](int64_t n, int64_t k, int ways) { return l2_seconds(n, k, ways * 512, 64); };
  EXPECT_GT(l2_seconds(2304, 1024, 48, 32 << 10), 1.25 * fully_associative(2304, 1024, 48));
  EXPECT_GT(l2_seconds(2304, 1024, 64, 32 << 10), 1.25 * fully_associative(2304, 1024, 64));
  EXPECT_NEAR(l2_seconds(2304, 1024, 96, 32 << 10), fully_associative(2304, 1024, 96), 1e-9);
}

// A micro-kernel reading B in place, a 64-byte run of each row K after K:
// a stride prefetcher follows rows under a page apart (N = 1000: 4000
// bytes); rows a page apart or more (N = 1024, 4096) put every load in
// another page, where prefetchers stop, and their misses from L3 stall the
// core (measured on an Intel Xeon, one thread: matmul 7x4096x1000's pick
// reading B's rows 16 KiB apart in place ran 3.1 ms, the pick this model
// makes instead 0.73 ms).
TEST(AnalyticModel, ConstantStridesOfAPageOrMoreAreNotFollowed) {
  auto stall = [](int64_t n) {
    const HwSpec spec = load_hwspec("haswell_avx2");
    const Task task =
        make_task(make_operator("matmul", {{"M", "7"}, {"N", std::to_string(n)}, {"K", "1000"}}), spec, 1);
    std::vector<std::string> steps = {"vectorize 1 8", "tile_grow 3 1"};
    steps.insert(steps.end(), 5, "tile_grow 3 0");
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][0] * 100 + s->tile[3][1], 616) << s->str();
    const Estimate e = estimate(*task.anchor, *s, spec, 1);
    double stalled = 0;
    for (int i = 0; i < e.caches; ++i) stalled += e.stall_s[i];
    return stalled;
  };
  EXPECT_EQ(stall(1000), 0.0);
  EXPECT_GT(stall(1024), 0.0);
  EXPECT_GT(stall(4096), 0.0);
}

TEST(AnalyticModel, ShortRunsOfLongRowsHoldWhatStreamPrefetchersBringBesideThem) {
  // C = A B, M x 771 x 4096, a 10x32 register tile over the whole of K, its
  // 10-row blocks innermost: each strip of B (4096 rows of 128 bytes, 3 KiB
  // apart) is read by every row block. Its 512 KiB would stay in a 2 MiB L2
  // as loads see it, but a stream prefetcher brings the next 512 bytes of
  // every row too: each row block reads B from L3 again. Blocked along K
  // (256 rows a block), the strip's block stays.
  const HwSpec spec = load_hwspec("emerald_rapids");
  auto l3_traffic = [&](int64_t m, int k_halvings) {
    const Task task =
        make_task(make_operator("matmul", {{"M", std::to_string(m)}, {"N", "771"}, {"K", "4096"}}), spec, 1);
    std::vector<std::string> steps = {"vectorize 1 16", "tile_grow 3 1"};
    steps.insert(steps.end(), 9, "tile_grow 3 0");
    steps.push_back("reorder 3 0");
    steps.insert(steps.end(), size_t(k_halvings), "tile_shrink 2 2");
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][0] * 100 + s->tile[3][1], 1032) << s->str();
    return estimate(*task.anchor, *s, spec, 1).level_s.at(1);
  };
  EXPECT_GT(l3_traffic(40, 0), 3.5 * l3_traffic(10, 0));
  EXPECT_LT(l3_traffic(40, 4), 1.2 * l3_traffic(10, 4));
}

TEST(AnalyticModel, RunsThatStartOffALineBringTheLinesTheySpan) {
  // C = A B, 37 x N x 512, B read in place by 2x32 register tiles: a run of
  // 32 floats (128 bytes) per row of B. Rows of 976, 1008 or 1040 floats (an
  // odd number of lines: no two rows' runs crowd a set) start on a line, and
  // each run spans 2 lines; rows of 984, 1000 or 1016 floats start on a line
  // or halfway through one, and half the runs span 3. Per column of B, the
  // traffic into L1 is then about 2.5 / 2 of the aligned rows'.
  const HwSpec spec = load_hwspec("zen4_server");
  auto l1_traffic_per_column = [&](int64_t n) {
    const Task task = make_task(
        make_operator("matmul", {{"M", "37"}, {"N", std::to_string(n)}, {"K", "512"}}), spec, 1);
    const State s = apply_all(task, {"vectorize 1 16", "tile_grow 3 1", "tile_grow 3 0"});
    EXPECT_EQ(s->tile[3][0] * 100 + s->tile[3][1], 232) << s->str();
    return estimate(*task.anchor, *s, spec, 1).level_s.at(0) / double(n);
  };
  const double aligned = l1_traffic_per_column(1008);
  for (int64_t n : {976, 1040}) EXPECT_NEAR(l1_traffic_per_column(n) / aligned, 1.0, 0.02) << n;
  for (int64_t n : {984, 1000, 1016}) EXPECT_NEAR(l1_traffic_per_column(n) / aligned, 1.25, 0.05) << n;
}

TEST(AnalyticModel, ATileTheNextCallReadsAgainNeedsAWayToSpare) {
  // C = A B with B's rows 3 KiB apart (N = 768): a 32-step reduction block
  // puts 8 of its lines into each of 4 sets of an 8-way L1, every way. Swept
  // down the rows of A (the loop around the micro-kernel does not move B),
  // the panel stays over many calls while A's and C's lines pass through
  // the same sets, and loses lines to them; swept along the columns
  // (another panel each call) it is read once anyway.
  auto conflict_penalty = [](bool rows_innermost) -> double {
    const HwSpec eight_way = load_hwspec("haswell_avx2");
    EXPECT_EQ(eight_way.cpu.caches.at(0).associativity, 8);
    HwSpec wide = eight_way;
    wide.cpu.caches[0].associativity = 512;  // a set per line
    const Task task = make_task(make_operator("matmul", {{"M", "2048"}, {"N", "768"}, {"K", "768"}}), eight_way, 1);
    std::vector<std::string> steps = {"vectorize 1 8", "tile_grow 3 1", "tile_grow 3 1"};
    steps.insert(steps.end(), 3, "tile_grow 3 0");  // 4 rows x 3 vectors
    steps.insert(steps.end(), 8, "tile_shrink 2 2");  // 768 -> 32
    const int innermost = rows_innermost ? 0 : 1;       // of the loops over micro-kernel calls
    const State unordered = apply_all(task, steps);
    const auto calls = unordered->order[3];
    if (calls[calls.size() - 1] != innermost) steps.push_back("reorder 3 " + std::to_string(calls.size() - 2));
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][0] * 100 + s->tile[3][1], 424) << s->str();
    EXPECT_EQ(s->tile[2][2], 32) << s->str();
    EXPECT_EQ(s->order[3][s->order[3].size() - 1], innermost) << s->str();
    return conflict_cost(estimate(*task.anchor, *s, eight_way, 1)) - conflict_cost(estimate(*task.anchor, *s, wide, 1));
  };
  EXPECT_GT(conflict_penalty(true), 0);
  EXPECT_EQ(conflict_penalty(false), 0);
}

TEST(AnalyticModel, AWayToSpareCountsWhatTheCallsReadBeforeComingBack) {
  // C = A B, 688 x 768 x 3072, B's rows 3 KiB apart read in place: a call's
  // 32 x 80 tile of B puts 8 lines into each of 20 sets of an 8-way L1. The
  // calls read two such tiles side by side, then come back to the first for
  // the next 4 rows of A: the two tiles (20 KiB) fit L1, but fill their
  // sets to the last way while A's and C's lines pass through, so each
  // step's 5 lines of B come from L2 again. Ten tiles side by side (100
  // KiB) are read from L2 anyway (the blocks' traffic), not charged twice.
  const Operator op = make_operator("matmul", {{"M", "688"}, {"N", "768"}, {"K", "3072"}});
  auto conflict = [&](int l1_column_shrinks) {
    const HwSpec eight_way = with_l1_ways(8), wide = with_l1_ways(512);  // a set per line
    const Task task = make_task(op, eight_way, 1);
    std::vector<std::string> steps = {"vectorize 1 16"};
    steps.insert(steps.end(), 4, "tile_grow 3 1");     // 5 vectors
    steps.insert(steps.end(), 3, "tile_grow 3 0");     // by 4 rows
    steps.insert(steps.end(), 12, "tile_shrink 2 2");  // 3072 -> 32 steps a call
    steps.insert(steps.end(), 3, "tile_shrink 2 1");   // 800 -> 80 columns
    steps.insert(steps.end(), 5, "tile_shrink 2 0");   // 688 -> 4 rows
    steps.insert(steps.end(), l1_column_shrinks, "tile_shrink 1 1");
    steps.insert(steps.end(), 11, "tile_shrink 1 2");  // 3072 -> 32
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][0] * 100 + s->tile[3][1], 480) << s->str();
    EXPECT_EQ(s->tile[2][0] * 1000000 + s->tile[2][1] * 1000 + s->tile[2][2], 4080032) << s->str();
    EXPECT_EQ(s->tile[1][0] * 1000 + s->tile[1][2], 688032) << s->str();
    EXPECT_EQ(s->order[2][1], 1) << s->str();  // the columns inside the rows
    return std::make_pair(s->tile[1][1], conflict_cost(estimate(*task.anchor, *s, eight_way, 1)) -
                                             conflict_cost(estimate(*task.anchor, *s, wide, 1)));
  };
  const auto [two_tiles, reread] = conflict(2);
  const auto [ten_tiles, read_once] = conflict(0);
  EXPECT_EQ(two_tiles, 160);
  EXPECT_EQ(ten_tiles, 800);
  const double steps = 688.0 * 768 * 3072 / (4 * 80);
  const double refills = steps * 5 * 64 / 118e9;  // at L2's streaming bandwidth (scattered reads as fast)
  EXPECT_NEAR(reread / refills, 1, 0.02);
  EXPECT_LT(read_once, 0.01 * refills);
}

TEST(AnalyticModel, LinesRefilledAfterASetConflictComeAtTheDemandRateOfTheirRuns) {
  // C = A B with B's rows 4 KiB apart: the micro-kernel's K loop reads one
  // 64-byte line of B per step, all in one set of an 8-way 4 KiB-a-way L1,
  // so every step refills its line from L2, a run of its own on another
  // page. Where L2's scattered reads (256-byte runs) cost 4x streaming, a
  // 64-byte run pays the same per-run cost: (3 x 256 + 64) / 64 = 13x the
  // line at the streaming rate.
  const Operator op = make_operator("matmul", {{"M", "196"}, {"N", "1024"}, {"K", "256"}});
  auto refill = [&](double slowdown) {
    const HwSpec eight_way = with_l1_ways(8, slowdown), wide = with_l1_ways(512, slowdown);  // a set per line
    const Task task = make_task(op, eight_way, 1);
    std::vector<std::string> steps = {"vectorize 1 16"};
    steps.insert(steps.end(), 5, "tile_grow 3 0");  // 6 rows x 1 vector
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][0] * 100 + s->tile[2][2], 6 * 100 + 256) << s->str();
    return conflict_cost(estimate(*task.anchor, *s, eight_way, 1)) - conflict_cost(estimate(*task.anchor, *s, wide, 1));
  };
  ASSERT_GT(refill(1), 0);
  EXPECT_NEAR(refill(4) / refill(1), 13, 0.1);
}

TEST(AnalyticModel, RowsNearAMultipleOfTheWayCrowdTheFewSetsTheyDriftThrough) {
  // C = A B read in place: micro-kernel calls of 2 rows by 48 columns over
  // 128 rows of B, the next call the next 2 rows of A on the same block of
  // B, which must still be in L1. At N = 1021, B's rows are 4084 bytes
  // apart, 12 bytes short of L1's 4 KiB way: each row starts in the set of
  // the last or the one before, and the block's 128 rows of 192 bytes put
  // 16 lines in a set of the 8 ways. At N = 1000 they drift 96 bytes a row
  // and spread over every set. B is left out of L2 (256 KiB).
  auto conflicts = [](int n) {
    HwSpec eight_way = with_l1_ways(8), wide = with_l1_ways(512);  // a set per line
    for (HwSpec* spec : {&eight_way, &wide}) spec->cpu.caches.at(1).size_bytes = 256 << 10;
    const Task task = make_task(make_operator("matmul", {{"M", "4"}, {"N", std::to_string(n)}, {"K", "128"}}),
                                eight_way, 1);
    const State s = apply_all(task, {"vectorize 1 16", "tile_grow 3 1", "tile_grow 3 1", "tile_grow 3 0", "reorder 3 0"});
    EXPECT_EQ(s->tile[3][0] * 100 + s->tile[3][1], 2 * 100 + 48) << s->str();
    EXPECT_EQ(s->order[3][0], 1) << s->str();  // the rows innermost
    return conflict_cost(estimate(*task.anchor, *s, eight_way, 1)) - conflict_cost(estimate(*task.anchor, *s, wide, 1));
  };
  EXPECT_GT(conflicts(1021), 0);
  EXPECT_NEAR(conflicts(1000), 0, 1e-12);
}

TEST(AnalyticModel, LinesRefilledIntoAThrashedSetPayWhatTheHostMeasuredALine) {
  // The previous test's B, one line a step into one crowded set, on a core
  // that measured 8 cycles a step with 8 + 3 rows thrashing a set: each
  // refilled line costs 8 / 11 cycles beyond its traffic (a Zen 4 core
  // measured 1.23 at 512 bits, 5.9 at 256, where a step has half the cycles
  // to hide it in).
  const Operator op = make_operator("matmul", {{"M", "196"}, {"N", "1024"}, {"K", "256"}});
  const HwSpec plain = with_l1_ways(8);
  HwSpec measured = plain;
  measured.cpu.caches[0].crowded_set_cycles = {0, 1, 2, 8};
  const Task task = make_task(op, plain, 1);
  std::vector<std::string> steps = {"vectorize 1 16"};
  steps.insert(steps.end(), 5, "tile_grow 3 0");  // 6 rows x 1 vector
  const State s = apply_all(task, steps);
  ASSERT_EQ(s->tile[3][0] * 100 + s->tile[2][2], 6 * 100 + 256) << s->str();
  const double reduction_steps = 196.0 * 1024 * 256 / (6 * 16), freq_hz = plain.cpu.frequency_ghz * 1e9;
  EXPECT_NEAR(estimate(*task.anchor, *s, measured, 1).penalty_s - estimate(*task.anchor, *s, plain, 1).penalty_s,
              reduction_steps * 8.0 / 11 / freq_hz, 1e-9);
  // Fully associative (a 512-way L1 of the same size), nothing crowds and nothing is charged.
  HwSpec wide = with_l1_ways(512), wide_measured = wide;
  wide_measured.cpu.caches[0].crowded_set_cycles = {0, 1, 2, 8};
  EXPECT_NEAR(estimate(*task.anchor, *s, wide_measured, 1).penalty_s, estimate(*task.anchor, *s, wide, 1).penalty_s,
              1e-12);
}

TEST(AnalyticModel, ARemainderWaitsOnTheStreamItsFmasCannotHide) {
  // matmul 37x4096x1000 reading B in place, a vector of 16 columns a step:
  // B's rows 16 KiB apart put each step's line into one L1 set. On a core
  // that refills such a stream at 10 cycles a line (8 over two sets), tiles
  // of 30 rows hide it behind 30 FMAs a step, but after them, a 7-row
  // remainder reads the same lines again, unhinted, with 7 FMAs a step: it
  // waits about 3 cycles a step (less what its broadcasts take anyway), 256
  // column tiles by 1000 steps. Tiles of 20 rows leave 17, which hide it.
  const HwSpec plain = with_l1_ways(8);
  HwSpec measured = plain;
  measured.cpu.caches[0].set_stream_cycles = {10, 8};
  const double freq_hz = plain.cpu.frequency_ghz * 1e9;
  auto wait_s = [&](int64_t m, int rows) {
    const Task task = make_task(make_operator("matmul", {{"M", std::to_string(m)}, {"N", "4096"}, {"K", "1000"}}),
                                plain, 1);
    std::vector<std::string> steps = {"vectorize 1 16"};
    steps.insert(steps.end(), size_t(rows - 1), "tile_grow 3 0");
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][0] * 100 + s->tile[3][1], rows * 100 + 16) << s->str();
    EXPECT_LT(s->pack[1], 0) << "B read in place: " << s->str();
    return estimate(*task.anchor, *s, measured, 1).penalty_s - estimate(*task.anchor, *s, plain, 1).penalty_s;
  };
  const double remainder_steps = 4096.0 / 16 * 1000;
  EXPECT_GT(wait_s(37, 30), remainder_steps * 1 / freq_hz);
  EXPECT_LE(wait_s(37, 30), remainder_steps * 3 / freq_hz);
  EXPECT_EQ(wait_s(37, 20), 0);
  // One pass over B (M = 7, one 7-row tile): lowering hints it ahead.
  EXPECT_EQ(wait_s(7, 7), 0);
}

TEST(AnalyticModel, AWindowSlidingAlongTheTileCountsItsLinesOnce) {
  // A depthwise 3x3 convolution in NHWC with 1024 channels: pixels 4 KiB
  // apart, so on a 32 KiB 8-way L1 (4 KiB per way) every pixel's first line
  // falls into one set. Over the micro-kernel's kw loop, a tile of 2 output
  // columns x 2 vectors reads input columns 0-3, not 3 x 2: 4 lines a set,
  // which fit. A tile of 7 columns reads 9: a set overflows.
  const HwSpec eight_way = with_l1_ways(8), wide = with_l1_ways(64);
  const Operator op = make_operator("depthwise_conv2d", {{"N", "1"}, {"H", "7"}, {"W", "7"}, {"C", "1024"},
                                                         {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}});
  const Task task = make_task(op, eight_way, 1);
  auto penalty = [&](const State& s, const HwSpec& spec) { return conflict_cost(estimate(*task.anchor, *s, spec, 1)); };
  std::vector<std::string> steps = {"vectorize 3 16", "tile_grow 3 3", "tile_grow 3 2"};
  const State two = apply_all(task, steps);
  ASSERT_EQ(two->tile[3][2] * 100 + two->tile[3][3], 232) << two->str();
  steps.insert(steps.end(), 5, "tile_grow 3 2");
  const State seven = apply_all(task, steps);
  ASSERT_EQ(seven->tile[3][2], 7) << seven->str();
  EXPECT_NEAR(penalty(two, eight_way), penalty(two, wide), 1e-12);
  EXPECT_GT(penalty(seven, eight_way), penalty(seven, wide));
}

TEST(AnalyticModel, ShortCallsThatFinishTheirReductionRunTheirChainsSideBySide) {
  // One accumulator a call: each of its FMAs waits for the last. A 3x3
  // depthwise call is 9 FMAs that finish its outputs; the next call's start
  // from fresh accumulators and the reorder window holds many such calls, so
  // their chains overlap. GEMM calls over K = 4 (a loop unrolled whole: no
  // copies of the accumulator, accumulator_copies) overlap likewise, and
  // wait for each other's accumulator cut in two blocks. A call down
  // K = 1024 fills the window alone, its accumulator's copies its chains.
  const HwSpec spec = load_hwspec("zen4_server");
  const double alone = 1.0 / (spec.cpu.fma_latency * spec.cpu.fma_units);
  auto ilp = [&](const Operator& op, const std::vector<std::string>& steps) {
    const Task task = make_task(op, spec, 1);
    const State s = apply_all(task, steps);  // throws naming an illegal step
    return estimate(*task.anchor, *s, spec, 1).ilp;
  };
  const Operator depthwise = make_operator(
      "depthwise_conv2d",
      {{"N", "1"}, {"H", "14"}, {"W", "14"}, {"C", "64"}, {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}});
  EXPECT_DOUBLE_EQ(ilp(depthwise, {"vectorize 3 16"}), 1);
  auto matmul = [](int k) { return make_operator("matmul", {{"M", "64"}, {"N", "64"}, {"K", std::to_string(k)}}); };
  EXPECT_DOUBLE_EQ(ilp(matmul(4), {"vectorize 1 16"}), 1);
  EXPECT_DOUBLE_EQ(ilp(matmul(4), {"vectorize 1 16", "tile_shrink 2 2"}), alone);
  EXPECT_DOUBLE_EQ(ilp(matmul(1024), {"vectorize 1 16"}), 1);
}

TEST(AnalyticModel, WindowRowsReadOnceFromL2CostNothingWhenTheyCrowdASet) {
  // A depthwise 3x3 stride-2 convolution in NHWC with 512 channels: a tile
  // of 7 output columns reads pixels 4 KiB apart, and its kh steps read
  // rows 28 KiB apart, all into one set of a 32 KiB 8-way L1: 21 lines over
  // the kh loop. But no kh step reads another's lines and the next call
  // (another output row or channel block) reads new ones, but for the row
  // read last: crowding loses nothing, and lines coming from L2 come at its
  // rate in the blocks' traffic (measured on a 48 KiB 12-way L1, 14x14 c512:
  // such a tile of 7 x 32 ran 1.4x faster than the model's pick, which the
  // charge had ranked above it). From beyond L2 (here an L2 too small for the
  // input), each step's lines stay charged as demand misses no prefetcher follows.
  const HwSpec eight_way = with_l1_ways(8), wide = with_l1_ways(64);
  const Operator op = make_operator("depthwise_conv2d", {{"N", "1"}, {"H", "14"}, {"W", "14"}, {"C", "512"},
                                                         {"KH", "3"}, {"KW", "3"}, {"stride", "2"}, {"pad", "1"}});
  const Task task = make_task(op, eight_way, 1);
  std::vector<std::string> steps = {"vectorize 3 16", "tile_grow 3 3"};
  steps.insert(steps.end(), 6, "tile_grow 3 2");
  const State s = apply_all(task, steps);
  ASSERT_EQ(s->tile[3][1] * 10000 + s->tile[3][2] * 100 + s->tile[3][3], 10732) << s->str();
  auto conflicts = [&](HwSpec spec, int64_t l2_bytes) {
    spec.cpu.caches[1].size_bytes = l2_bytes;
    return conflict_cost(estimate(*task.anchor, *s, spec, 1));
  };
  const int64_t input_bytes = 14 * 14 * 512 * 4;
  EXPECT_NEAR(conflicts(eight_way, 4 * input_bytes), conflicts(wide, 4 * input_bytes), 1e-12);
  EXPECT_GT(conflicts(eight_way, input_bytes / 2), 1.5 * conflicts(wide, input_bytes / 2));
}

TEST(AnalyticModel, AProblemJustPastACacheFindsMostOfItThereOnTheNextRun) {
  // An l2 norm of 2^18 floats: input and output 2 MiB and 4 bytes. In an L2
  // of 4 MiB it stays; of 1.875 MiB (a little smaller) the next run finds
  // all but what exceeds three quarters of it; of 1.5 MiB every byte comes
  // from L3 again.
  const HwSpec spec = spec_with_scatter(1);
  const Task task = make_task(make_operator("reduce", {{"M", "1"}, {"N", "262144"}, {"kind", "l2"}}), spec, 1);
  const State s = construct_states(task, 1, ConstructOptions{})[0].state;
  auto from_l3 = [&](double l2_mib) {
    HwSpec h = spec;
    h.cpu.caches[1].size_bytes = int64_t(l2_mib * (1 << 20));
    h.cpu.caches[1].shared_by_cores = 1;
    return estimate(*task.anchor, *s, h, 1).level_s[1];
  };
  const double all = from_l3(1.5), near = from_l3(1.875);
  ASSERT_GT(all, 0);
  EXPECT_EQ(from_l3(4), 0);
  EXPECT_GT(near, 0);
  EXPECT_LT(near, 0.5 * all);
}

TEST(AnalyticModel, RegistersBeyondTheFileSpill) {
  // Y = X W^T with the reduction vectorized: 5 x 6 outputs need 30
  // accumulators plus 5 operand vectors kept and one streaming in, 4 past
  // 32 registers; 5 x 4 fit.
  const HwSpec spec = spec_with_scatter(1);
  ASSERT_EQ(spec.cpu.vector_registers, 32);
  const Task task = make_task(make_operator("dense", {{"M", "80"}, {"N", "768"}, {"K", "3072"}}), spec, 1);
  std::vector<std::string> steps = {"vectorize 2 16"};
  steps.insert(steps.end(), 4, "tile_grow 3 0");
  steps.insert(steps.end(), 3, "tile_grow 3 1");
  const State fits = apply_all(task, steps);
  ASSERT_EQ(fits->tile[3][0] * 10 + fits->tile[3][1], 54) << fits->str();
  steps.insert(steps.end(), 2, "tile_grow 3 1");
  const State spills = apply_all(task, steps);
  ASSERT_EQ(spills->tile[3][0] * 10 + spills->tile[3][1], 56) << spills->str();
  const Estimate a = estimate(*task.anchor, *fits, spec, 1), b = estimate(*task.anchor, *spills, spec, 1);
  // Per reduction step (30 outputs x 16 lanes), 4 registers stored and
  // reloaded: the spilled tile's penalty exceeds the other's by at least
  // half of that (the rest of the penalty is per call and per output).
  const double steps_taken = 80.0 * 768 * 3072 / (30 * 16);
  EXPECT_GT(b.penalty_s, a.penalty_s + 0.5 * steps_taken * 4 / (spec.cpu.frequency_ghz * 1e9));
}

// Compute time per flop of a matmul's state built by `steps` (one register
// level of tiles: vectorize N by 8, then grow the register tile).
double compute_per_flop(const HwSpec& spec, int64_t M, const std::vector<std::string>& steps, State* out = nullptr) {
  const Task task = make_task(make_operator("matmul", {{"M", std::to_string(M)}, {"N", "64"}, {"K", "256"}}), spec, 1);
  const State s = apply_all(task, steps);
  if (out) *out = s;
  return estimate(*task.anchor, *s, spec, 1).compute_s / (2.0 * double(M) * 64 * 256);
}

TEST(AnalyticModel, OneAccumulatorIsBoundByTheFmaLatencyAlone) {
  // One vector accumulator, its K loop unrolled whole (K = 4: no copies of
  // it, accumulator_copies) and cut in blocks of 2 (each call waits for the
  // last's): each reduction step waits for the previous FMA (fma_latency
  // cycles) while its two loads take one cycle beside it; the step costs the
  // latency, not the latency and the loads one after the other.
  const HwSpec spec = load_hwspec("haswell_avx2");
  const Task task = make_task(make_operator("matmul", {{"M", "16"}, {"N", "64"}, {"K", "4"}}), spec, 1);
  const State s = apply_all(task, {"vectorize 1 8", "tile_shrink 2 2"});
  ASSERT_EQ(s->tile[s->reg_level()][0] * 100 + s->tile[s->reg_level()][1], 108) << s->str();
  const double t = estimate(*task.anchor, *s, spec, 1).compute_s / (2.0 * 16 * 64 * 4);
  const double at_peak = 1 / (spec.cpu.peak_gflops_per_core * 1e9);
  EXPECT_NEAR(t / at_peak, double(spec.cpu.fma_latency * spec.cpu.fma_units), 1e-9);
  // Down K = 256, it cycles through copies enough to hide the latency: its
  // two loads, a cycle, bound the step.
  EXPECT_NEAR(compute_per_flop(spec, 16, {"vectorize 1 8"}) / at_peak, double(spec.cpu.fma_units), 1e-9);
}

TEST(AnalyticModel, PeeledRemaindersRunAtTheirOwnRate) {
  // A register tile of 2 rows x 5 vectors (10 accumulators: enough to hide
  // the FMA latency) over M = 4 runs whole; over M = 3 its last row is a
  // peeled body of 5 accumulators, which 16 registers leave no room to copy
  // (accumulator_copies), latency bound, doing a third of the work at a
  // fraction of the rate.
  const HwSpec spec = load_hwspec("haswell_avx2");
  ASSERT_EQ(spec.cpu.vector_registers, 16);
  std::vector<std::string> steps = {"vectorize 1 8", "tile_grow 3 0"};
  steps.insert(steps.end(), 4, "tile_grow 3 1");
  auto per_flop = [&](int64_t M, State* out) {
    const Operator op = make_operator("matmul", {{"M", std::to_string(M)}, {"N", "40"}, {"K", "256"}});
    const Task task = make_task(op, spec, 1);
    *out = apply_all(task, steps);
    return estimate(*task.anchor, **out, spec, 1).compute_s / (2.0 * double(M) * 40 * 256);
  };
  State whole, cut;
  const double t_whole = per_flop(4, &whole);
  const double t_cut = per_flop(3, &cut);
  const int reg = whole->reg_level();
  ASSERT_EQ(whole->tile[reg][0] * 100 + whole->tile[reg][1], 240) << whole->str();
  ASSERT_EQ(cut->tile[reg][0] * 100 + cut->tile[reg][1], 240) << cut->str();
  // The 5-accumulator row: fma_latency cycles per step instead of 5 / fma_units.
  const double tail_slowdown = double(spec.cpu.fma_latency) / (5.0 / spec.cpu.fma_units);
  EXPECT_NEAR(t_cut / t_whole, 2.0 / 3 + tail_slowdown / 3, 1e-6);
}

TEST(AnalyticModel, EachElementsFirstPackReadsItFromWhereTheOperandLives) {
  // matmul 7x4096x1000 packing B (16 MB) once a call, in panels of 24
  // columns by 200 rows: each element's pack reads it from memory, where B
  // lives between runs, not from the cache the panel's parent tile lives in
  // (measured on Zen 3: a call took 2.8 ms, estimated at 1.4 with the packs
  // reading L3, where reading B in place took 1.2). Where L3 holds B, from
  // L3. Lowering asks L2 for the next panel's source during the current
  // one's micro-kernels, so the time reading from L3 adds hides behind
  // theirs (up to it: all of it here), not the time reading from memory
  // adds. The spec has no measured bandwidths: 64 bytes a cycle from L1,
  // halving per level, at 2.5 GHz: 80 GB/s from L2, 20 from memory.
  const HwSpec spec = load_hwspec("haswell_avx2");
  ASSERT_DOUBLE_EQ(spec.cpu.frequency_ghz, 2.5);
  const Operator op = make_operator("matmul", {{"M", "7"}, {"N", "4096"}, {"K", "1000"}});
  std::vector<std::string> steps = {"vectorize 1 8", "tile_grow 3 1", "tile_grow 3 1"};  // 24 columns
  steps.insert(steps.end(), 2, "tile_grow 3 0");                                         // 3 rows
  const Task task = make_task(op, spec, 1);
  while (apply_all(task, steps)->tile[2][2] > 200) steps.push_back("tile_shrink 2 2");
  while (apply_all(task, steps)->tile[2][1] > 24) steps.push_back("tile_shrink 2 1");
  steps.push_back("pack 1 11");  // B, at the L1 tile's innermost point
  const State state = apply_all(task, steps);
  ASSERT_EQ(state->tile[2][1] * 1000 + state->tile[2][2], 24200) << state->str();
  const double b_bytes = 4.0 * 4096 * 1000;
  HwSpec in_l3 = spec;  // an L3 that holds B, then an L2 that does
  in_l3.cpu.caches.back().size_bytes = int64_t(256) << 20;
  in_l3.cpu.caches.back().shared_by_cores = 1;
  HwSpec in_l2 = in_l3;
  in_l2.cpu.caches[1].size_bytes = int64_t(256) << 20;
  auto pack_s = [&](const HwSpec& on) { return estimate(*task.anchor, *state, on, 1).pack_s; };
  EXPECT_NEAR(pack_s(spec) - pack_s(in_l3), b_bytes * (1 / 20e9 - 1 / 80e9), 1e-9);
  EXPECT_NEAR(pack_s(in_l3), pack_s(in_l2), 1e-12);
}

TEST(AnalyticModel, AnUnrolledWindowLoopKeepsItsCopiesOperandsLive) {
  // A 3x3 convolution's register tile of 6 output rows x 2 vectors on 16
  // registers: 12 accumulators, one broadcast and one vector streaming in.
  // With input channels innermost in the micro-kernel that fits. With kh
  // innermost, its 3 taps are unrolled (by 4: whole) and row i of tap k
  // is row i + 1 of tap k - 1: LLVM loads the window's 8 rows once for all
  // copies and keeps their broadcasts live, with the vector streaming in:
  // 21 registers, 5 spill every step. With kw innermost the taps slide
  // along the output columns, which the tile does not span: no overlap.
  const HwSpec spec = load_hwspec("haswell_avx2");
  ASSERT_EQ(spec.cpu.vector_registers, 16);
  // Unpadded (30x30 in, 28x28 out): no border tiles, whose guards the taps'
  // order would also move.
  const Task task = make_task(make_operator("conv2d", {{"N", "1"}, {"H", "30"}, {"W", "30"}, {"CI", "128"},
                                                       {"CO", "128"}, {"KH", "3"}, {"KW", "3"}, {"pad", "0"}}),
                              spec, 1);
  std::vector<std::string> steps = {"vectorize 3 8", "tile_grow 3 3", "unroll 4 0"};
  steps.insert(steps.end(), 5, "tile_grow 3 1");
  const State channels_inner = apply_all(task, steps);
  const int reg = channels_inner->reg_level();
  ASSERT_EQ(channels_inner->tile[reg][1] * 100 + channels_inner->tile[reg][3], 616) << channels_inner->str();
  steps.push_back("reorder 2 5");  // kh, ci, kw
  const State kw_inner = apply_all(task, steps);
  steps.insert(steps.end(), {"reorder 2 4", "reorder 2 5"});  // ci, kw, kh
  const State kh_inner = apply_all(task, steps);
  ASSERT_EQ(*(kh_inner->order[reg - 1].end() - 1), 4) << kh_inner->str();
  const Estimate a = estimate(*task.anchor, *channels_inner, spec, 1);
  const Estimate b = estimate(*task.anchor, *kw_inner, spec, 1);
  const Estimate c = estimate(*task.anchor, *kh_inner, spec, 1);
  EXPECT_NEAR(b.penalty_s, a.penalty_s, 1e-12);
  double points = 1;
  for (int ax = 0; ax < task.anchor->num_axes(); ++ax) points *= double(task.anchor->plan_extent(ax));
  const double steps_taken = points / (6 * 16);
  EXPECT_NEAR(c.penalty_s - a.penalty_s, steps_taken * 5 / (spec.cpu.frequency_ghz * 1e9), 1e-3 * c.penalty_s);
}

// A 3x3 depthwise window over 48x48x`channels` outputs, unpadded (no row or
// column remainders for the blocks below, no border tiles, whose guards the
// taps' order would also move) with the spec's lanes, register block
// `rows` output rows x `cols` output columns x `vectors` channel vectors,
// taps along the columns (kw) or the rows (kh) innermost in the micro-
// kernel, unrolled by `unroll` (4: whole).
struct DepthwiseBlock {
  Task task;
  State kw_inner, kh_inner;
  DepthwiseBlock(const HwSpec& spec, int rows, int cols, int vectors, int channels, int unroll = 4, int stride = 1)
      : task(make_task(make_operator("depthwise_conv2d", {{"N", "1"}, {"H", std::to_string(47 * stride + 3)},
                                                          {"W", std::to_string(47 * stride + 3)},
                                                          {"C", std::to_string(channels)}, {"KH", "3"}, {"KW", "3"},
                                                          {"stride", std::to_string(stride)}, {"pad", "0"}}),
                       spec, 1)) {
    const int lanes = spec.cpu.fp32_lanes();
    std::vector<std::string> steps = {"vectorize 3 " + std::to_string(lanes)};
    if (unroll > 1) steps.push_back("unroll " + std::to_string(unroll) + " 0");  // a new state starts at 1
    steps.insert(steps.end(), size_t(vectors - 1), "tile_grow 3 3");
    steps.insert(steps.end(), size_t(cols - 1), "tile_grow 3 2");
    steps.insert(steps.end(), size_t(rows - 1), "tile_grow 3 1");
    kw_inner = apply_all(task, steps);
    const int reg = kw_inner->reg_level();
    EXPECT_EQ(kw_inner->tile[reg][1] * 10000 + kw_inner->tile[reg][2] * 100 + kw_inner->tile[reg][3],
              rows * 10000 + cols * 100 + vectors * lanes)
        << kw_inner->str();
    EXPECT_EQ(*(kw_inner->order[reg - 1].end() - 1), 5) << kw_inner->str();
    steps.push_back("reorder " + std::to_string(reg - 1) + " 4");
    kh_inner = apply_all(task, steps);
    EXPECT_EQ(*(kh_inner->order[reg - 1].end() - 1), 4) << kh_inner->str();
  }
  Estimate estimate_of(const State& s) const { return estimate(*task.anchor, *s, task.target, 1); }
};

TEST(AnalyticModel, AWindowSlidingOverItsWholeUnrolledTapsIsLoadedOnce) {
  // 2 columns x 4 vectors (8 accumulators). With kw innermost its 3 taps
  // are unrolled whole and slide along the columns: LLVM loads the 4 input
  // columns once for all of them (16 vector loads and 12 of weights for 24
  // FMAs), where with kh innermost each tap loads its own 2 columns (24 and
  // 12). Per step: 9.33 loads, not 12, at 2 a cycle, beside 4 cycles of
  // FMAs (a call's 72 FMAs finish its outputs, so the next calls' fill its
  // chains' latency): the loads bound the step, 4.67 cycles and not 6.
  const HwSpec spec = load_hwspec("haswell_avx2");
  ASSERT_EQ(spec.cpu.vector_registers, 16);
  ASSERT_EQ(spec.cpu.load_bytes(), 64);
  ASSERT_EQ(spec.cpu.fma_units, 2);
  const DepthwiseBlock block(spec, 1, 2, 4, 192);
  const Estimate sliding = block.estimate_of(block.kw_inner), fixed = block.estimate_of(block.kh_inner);
  const double fma_cycles = 4;
  EXPECT_NEAR(fixed.compute_s / sliding.compute_s, std::max(fma_cycles, 12.0 / 2) / std::max(fma_cycles, 28.0 / 3 / 2),
              1e-6);
  // Both fit the register file: 8 accumulators, one channel vector's window
  // of 4 columns and one more, and the 3 taps' weights of that vector.
  EXPECT_NEAR(sliding.penalty_s, fixed.penalty_s, 1e-3 * fixed.penalty_s);
  // At factors 2 and 1 the lowering still unrolls the 3 taps whole (a
  // window's few taps are, whatever the factor): the same loads.
  for (int unroll : {2, 1}) {
    const DepthwiseBlock cut(spec, 1, 2, 4, 192, unroll);
    EXPECT_NEAR(cut.estimate_of(cut.kw_inner).compute_s, sliding.compute_s, 1e-9 * sliding.compute_s) << unroll;
  }
}

TEST(AnalyticModel, ASlidingWindowKeepsItsReusedColumnsAndTheTapsWeightsLive) {
  // LLVM's code for depthwise blocks of one row (the JIT's optimized IR
  // through llc -O3 for sapphirerapids, znver4 alike, 32 registers, kw
  // innermost; 14x14x384 unpadded) keeps none or a few registers on the
  // stack at 1 x 7 x 2 and 1 x 4 x 4 (columns x vectors), and spills every
  // step at 1 x 5 x 4 and 1 x 7 x 3 (12 to 18 a step; they ran at 78 and 87
  // GFLOP/s where 1 x 4 x 4 ran at 130) as at 1 x 4 x 6, 1 x 6 x 4 and
  // 1 x 8 x 3: the blocks whose accumulators, one channel vector's window
  // columns that a later tap reads again and one more, and the weights of
  // the 3 taps, all of their vectors (each is read by 3 FMAs of a step or
  // more), pass the 32 registers. Counted a vector a tap, the weights left
  // 1 x 5 x 4 inside.
  const HwSpec spec = load_hwspec("zen4_server");
  ASSERT_EQ(spec.cpu.vector_registers, 32);
  for (auto [cols, vectors, spills] :
       {std::tuple{7, 2, false}, {4, 6, true}, {6, 4, true}, {8, 3, true}, {5, 4, true}}) {
    const DepthwiseBlock block(spec, 1, cols, vectors, 192);
    const double live = cols * vectors + (cols + 2) + 1 + 3 * vectors;
    EXPECT_EQ(live > 32, spills);
    const Estimate sliding = block.estimate_of(block.kw_inner), fixed = block.estimate_of(block.kh_inner);
    // With kh innermost nothing slides: the accumulators plus the weights'
    // vectors and one streaming in, which all of these fit.
    const double steps = 48.0 * 48 * 192 * 9 / (cols * vectors * 16);
    const double spill_s = steps * (live - 32) / (spec.cpu.frequency_ghz * 1e9);
    if (spills)
      EXPECT_NEAR(sliding.penalty_s - fixed.penalty_s, spill_s, 0.05 * spill_s) << cols << "x" << vectors;
    else
      EXPECT_NEAR(sliding.penalty_s, fixed.penalty_s, 1e-3 * fixed.penalty_s) << cols << "x" << vectors;
  }
  // A stride-2 window's odd columns are read by one tap each: loaded into
  // their FMA, they are not kept. 1 x 7 x 3 at stride 2 keeps the 6 even
  // columns between its first and last and one more, not all 15: 21 + 7 +
  // 9 registers, 5 past the file, not 13.
  const DepthwiseBlock strided(spec, 1, 7, 3, 192, 4, 2);
  const Estimate sliding = strided.estimate_of(strided.kw_inner), fixed = strided.estimate_of(strided.kh_inner);
  const double steps = 48.0 * 48 * 192 * 9 / (7 * 3 * 16);
  const double spill_s = steps * (21 + 7 + 9 - 32) / (spec.cpu.frequency_ghz * 1e9);
  EXPECT_NEAR(sliding.penalty_s - fixed.penalty_s, spill_s, 0.05 * spill_s);
}

TEST(AnalyticModel, PeeledBorderTilesAreNotChargedTheirGuards) {
  // Depthwise 3x3 over 14x14x384 outputs, padded by 1, in blocks of 1 row x
  // 3 columns x 3 vectors. With kw innermost (unrolled whole) lowering peels
  // the columns' border tiles (schedule/state.h, border_tiles): only the rows
  // are charged, their border tiles a 2/14 share of the vector FMAs, a cycle
  // each. With kh innermost the rows are peeled and the columns' tiles
  // reaching the border, 6 of 14 columns, are charged. Unpadded, nothing is.
  const HwSpec spec = load_hwspec("zen4_server");
  const int lanes = spec.cpu.fp32_lanes();
  auto penalty = [&](const std::string& size, const std::string& pad, bool kh_inner) {
    const Task task = make_task(make_operator("depthwise_conv2d", {{"N", "1"}, {"H", size}, {"W", size}, {"C", "384"},
                                                                   {"KH", "3"}, {"KW", "3"}, {"stride", "1"},
                                                                   {"pad", pad}}),
                                spec, 1);
    std::vector<std::string> steps = {"vectorize 3 " + std::to_string(lanes), "tile_grow 3 3", "tile_grow 3 3",
                                      "tile_grow 3 2", "tile_grow 3 2"};
    if (kh_inner) steps.push_back("reorder 2 4");
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][2] * 1000 + s->tile[3][3], 3000 + 3 * lanes) << s->str();
    const int padded_axis = kh_inner ? 1 : 2;
    EXPECT_EQ(border_tiles(*s, *task.anchor, padded_axis, 0, 14).has_value(), pad == "1") << s->str();
    EXPECT_FALSE(border_tiles(*s, *task.anchor, 3 - padded_axis, 0, 14).has_value()) << s->str();
    return estimate(*task.anchor, *s, spec, 1).penalty_s;
  };
  const double vector_fma_s = 14.0 * 14 * 384 * 9 / lanes / (spec.cpu.frequency_ghz * 1e9);
  for (bool kh_inner : {false, true}) {
    const double charged = penalty("14", "1", kh_inner) - penalty("16", "0", kh_inner);
    const double share = kh_inner ? 6.0 / 14 : 2.0 / 14;
    EXPECT_NEAR(charged, share * vector_fma_s, 0.01 * vector_fma_s) << (kh_inner ? "kh" : "kw") << " innermost";
  }
}

TEST(AnalyticModel, AWindowsOverlappingRowsAreReadOnce) {
  // Depthwise 3x3 over 56x56x144 (1.8 MB in, 1.8 MB out: past L2), micro-
  // kernel calls walking along rows: consecutive calls share two of their
  // three input rows (and columns), which stay in the cache the calls'
  // rows fit in. The input then moves into L2 about once, as for a 1x1
  // window over the same image (one run of pixels: collapse_axes.h), not
  // once per window row.
  const HwSpec spec = spec_with_scatter(1);
  auto l2_seconds = [&](int k) {
    const std::string size = std::to_string(56 + k - 1);
    const Task task = make_task(make_operator("depthwise_conv2d", {{"N", "1"}, {"H", size}, {"W", size}, {"C", "144"},
                                                                   {"KH", std::to_string(k)}, {"KW", std::to_string(k)},
                                                                   {"stride", "1"}, {"pad", "0"}}),
                                spec, 1);
    EXPECT_EQ(task.anchor->num_spatial, k == 1 ? 2 : 4);  // [pixel, channel] or [n, oh, ow, channel]
    const std::string columns = "tile_grow 3 " + std::to_string(task.anchor->num_spatial - 2);
    const State s = apply_all(task, {"vectorize " + std::to_string(task.anchor->num_spatial - 1) + " 16", columns,
                                     columns});
    const Estimate e = estimate(*task.anchor, *s, spec, 1);
    EXPECT_GT(e.level_s[1], 0) << s->str() << "\n" << e.str();
    return e.level_s[1];
  };
  EXPECT_LT(l2_seconds(3), 1.3 * l2_seconds(1));
}

TEST(AnchorAccess, DataTilesFollowTheWindow) {
  // A 3x3 stride-2 NHWC convolution reads X_pad[n, oh*2 + kh, ow*2 + kw, ci]:
  // 4 x 7 outputs over the whole window read (2*3 + 2 + 1) x (2*6 + 2 + 1)
  // input positions of 16 channels; the weights W[kh, kw, ci, co] do not
  // move with the outputs' rows or columns.
  const Task task = make_task(make_operator("conv2d", {{"N", "1"}, {"H", "30"}, {"W", "30"}, {"CI", "16"}, {"CO", "8"},
                                                       {"KH", "3"}, {"KW", "3"}, {"stride", "2"}, {"pad", "1"}}),
                              spec_with_scatter(1), 1);
  const AnchorInfo& an = *task.anchor;
  ASSERT_EQ(an.num_axes(), 7);
  ASSERT_EQ(an.const_extent, (std::vector<int64_t>{1, 15, 15, 8, 3, 3, 16}));  // n oh ow co | kh kw ci
  ASSERT_EQ(an.accesses.size(), 2u);
  const Access& input = an.accesses[0].tensor.shape().size() == 4 && an.accesses[0].uses_axis[1] ? an.accesses[0]
                                                                                                   : an.accesses[1];
  const Access& weights = &input == &an.accesses[0] ? an.accesses[1] : an.accesses[0];
  const int64_t tile[7] = {1, 4, 7, 8, 3, 3, 16};
  EXPECT_EQ(input.data_tile(tile), 1.0 * 9 * 15 * 16);
  EXPECT_EQ(weights.data_tile(tile), 3.0 * 3 * 16 * 8);
  EXPECT_EQ(an.output.data_tile(tile), 4.0 * 7 * 8);
  for (int a : {1, 2}) EXPECT_TRUE(input.windowed(a, an.num_spatial)) << a;
  for (int a : {0, 3}) EXPECT_FALSE(input.windowed(a, an.num_spatial)) << a;
  for (int a = 0; a < an.num_spatial; ++a) EXPECT_FALSE(weights.windowed(a, an.num_spatial)) << a;
  // Over the whole window every input position in the box is touched. One
  // tap (kh, kw fixed) touches every other row and column of its box:
  // 4 x 7 positions, not 7 x 13.
  EXPECT_EQ(input.touched_tile(tile), input.data_tile(tile));
  const int64_t one_tap[7] = {1, 4, 7, 8, 1, 1, 16};
  EXPECT_EQ(input.data_tile(one_tap), 1.0 * 7 * 13 * 16);
  EXPECT_EQ(input.touched_tile(one_tap), 1.0 * 4 * 7 * 16);
  EXPECT_EQ(weights.touched_tile(one_tap), weights.data_tile(one_tap));
}

TEST(AnalyticModel, AStridedWindowStepLoadsTheRowsItTouches) {
  // Depthwise 5x5 stride 2 over 75x75x128, a register block of 2 output rows
  // x 1 column x 4 vectors, kw innermost: each tap's step loads its 2 input
  // rows of 4 vectors (every other row: the rows between belong to the next
  // kh) and 4 of weights, 12 loads at one a cycle for 8 FMAs; the box of
  // 3 rows would make it 16. (LLVM's code: 12.)
  const HwSpec spec = load_hwspec("zen4_server");
  ASSERT_EQ(spec.cpu.load_bytes(), 64);
  ASSERT_EQ(spec.cpu.fma_units, 1);
  const Task task =
      make_task(make_operator("depthwise_conv2d", {{"N", "1"}, {"H", "75"}, {"W", "75"}, {"C", "128"}, {"KH", "5"},
                                                   {"KW", "5"}, {"stride", "2"}, {"pad", "2"}}),
                spec, 1);
  auto block = [&](int rows) {
    std::vector<std::string> steps = {"vectorize 3 16", "unroll 4 0"};
    steps.insert(steps.end(), 3, "tile_grow 3 3");
    steps.insert(steps.end(), size_t(rows - 1), "tile_grow 3 1");
    return apply_all(task, steps);
  };
  const State one = block(1), two = block(2);
  const int reg = two->reg_level();
  ASSERT_EQ(two->tile[reg][1] * 1000 + two->tile[reg][2] * 100 + two->tile[reg][3], 2164) << two->str();
  ASSERT_EQ(*(two->order[reg - 1].end() - 1), 5) << two->str();
  // Per step, 1 row: 4 + 4 loads for 4 FMAs (8 cycles); 2 rows: 8 + 4 for 8 (12 cycles). The same
  // flops in 3/4 of the time.
  const double t1 = estimate(*task.anchor, *one, spec, 1).compute_s;
  const double t2 = estimate(*task.anchor, *two, spec, 1).compute_s;
  EXPECT_NEAR(t2 / t1, (12.0 / 8) / (8.0 / 4), 0.02);
}

// Construction ranks the states it emits, unrolled: the unroll decides how
// often each load of the reduction loop runs in a row, so whether a stride
// prefetcher follows it. A 7x7 512->512 3x3 convolution's candidates read
// weights 2 KB apart along short reduction loops, whose estimates the
// unroll changes. Each carries its own estimate, best first.
TEST(AnalyticModel, ConstructionRanksTheStatesItEmits) {
  const HwSpec spec = load_hwspec("zen4_server");
  const Task task = make_task(make_operator("conv2d", {{"N", "1"}, {"H", "7"}, {"W", "7"}, {"CI", "512"}, {"CO", "512"},
                                                       {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}}),
                              spec, 1);
  const std::vector<RankedState> top = construct_states(task, 10, {});
  ASSERT_EQ(top.size(), 10u);
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_EQ(top[i].estimate.seconds, estimate(*task.anchor, *top[i].state, spec, 1).seconds) << top[i].state->str();
    if (i > 0) EXPECT_LE(top[i - 1].estimate.seconds, top[i].estimate.seconds) << top[i].state->str();
  }
}

// Top-1 is top-10's first: asking for fewer states ranks as many of the
// walk's best once unrolled (the unroll re-ranks them). Ranked from the
// walk's best two alone, top-1 was a state the model itself rated up to
// 1.7x slower than top-10's first: a 3x3 convolution at 7x7 with 512
// channels on zen5_server and sapphire_rapids, a 5x5 stride-2 depthwise
// one on haswell_avx2 and emerald_rapids.
TEST(AnalyticModel, TopOneIsTheFirstOfTopTen) {
  const Operator conv = make_operator("conv2d", {{"N", "1"}, {"H", "7"}, {"W", "7"}, {"CI", "512"}, {"CO", "512"},
                                                 {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}});
  const Operator depthwise = make_operator(
      "depthwise_conv2d",
      {{"N", "1"}, {"H", "75"}, {"W", "75"}, {"C", "88"}, {"KH", "5"}, {"KW", "5"}, {"stride", "2"}, {"pad", "2"}});
  for (const std::string& name : {"zen5_server", "sapphire_rapids", "haswell_avx2", "emerald_rapids"})
    for (const Operator& op : {conv, depthwise}) {
      const Task task = make_task(op, load_hwspec(name), 1);
      const std::vector<RankedState> one = construct_states(task, 1, {}), ten = construct_states(task, 10, {});
      ASSERT_FALSE(one.empty());
      ASSERT_FALSE(ten.empty());
      EXPECT_EQ(*one[0].state, *ten[0].state) << name << " " << op.name << ": " << one[0].state->str() << " against "
                                              << ten[0].state->str();
    }
}

// A micro-kernel reading its padded input from a buffer that holds the
// padding skips the taps that read only padding, and the model charges the
// steps it runs. At 9 x 7 outputs of a 3 x 3 window padded by 1, a register
// tile spanning the rows, one column wide, runs each element's own taps:
// 25 of 27 row taps, 19 of 21 column taps. Read through the padding's
// guard, every step runs.
TEST(AnalyticModel, SkippedPaddingTapsCostNothing) {
  const HwSpec hw = load_hwspec("haswell_avx2");
  const Task task = make_task(make_operator("conv2d", {{"N", "1"}, {"H", "9"}, {"W", "7"}, {"CI", "5"}, {"CO", "16"},
                                                       {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}}),
                              hw, 1);
  const AnchorInfo& an = *task.anchor;
  ASSERT_EQ(an.padded_axes.size(), 2u);  // rows and columns, each bounded below and above
  EXPECT_EQ(an.padded_axes[0].taps.front(), std::make_pair(int64_t(1), int64_t(2)));  // the first row's taps
  EXPECT_EQ(an.padded_axes[0].taps.back(), std::make_pair(int64_t(0), int64_t(1)));   // the last row's
  std::string steps = "vectorize 3 8\n";
  for (int i = 1; i < 9; ++i) steps += "tile_grow 3 1\n";
  const State guarded = replay(an, hw, parse_steps(steps));
  const State materialized = replay(an, hw, parse_steps(steps + "materialize 0 1\n"));
  ASSERT_TRUE(guarded->reads_through_guard(an, 0));
  ASSERT_FALSE(materialized->reads_through_guard(an, 0));
  const double share = estimate(an, *materialized, hw, 1).compute_s / estimate(an, *guarded, hw, 1).compute_s;
  EXPECT_NEAR(share, 25.0 / 27 * 19.0 / 21, 1e-9);
}

TEST(AnalyticModel, GuardsFoldAlongAnAxisARegisterTileSpansWithItsTapsUnrolled) {
  // A 7x7 depthwise window padded by 1, register tile a whole row of 7
  // columns by one vector. With kw innermost (3 taps, unrolled whole) each
  // element's column test is a constant once lowered and folds away: only
  // the rows' border (tiles of one row: 2 of 7) branches. With kh innermost
  // the column taps are a loop and every tile reaches the columns' border.
  const HwSpec spec = load_hwspec("zen4_server");
  const Task task = make_task(make_operator("depthwise_conv2d", {{"N", "1"}, {"H", "7"}, {"W", "7"}, {"C", "16"},
                                                                  {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}),
                              spec, 1);
  std::vector<std::string> steps = {"vectorize 3 16"};
  steps.insert(steps.end(), 6, "tile_grow 3 2");
  const State kw_inner = apply_all(task, steps);
  const int reg = kw_inner->reg_level();
  ASSERT_EQ(kw_inner->tile[reg][2], 7) << kw_inner->str();
  ASSERT_EQ(*(kw_inner->order[reg - 1].end() - 1), 5) << kw_inner->str();
  ASSERT_TRUE(kw_inner->reads_through_guard(*task.anchor, 0));
  steps.push_back("reorder " + std::to_string(reg - 1) + " 4");
  const State kh_inner = apply_all(task, steps);
  ASSERT_EQ(*(kh_inner->order[reg - 1].end() - 1), 4) << kh_inner->str();
  const double points = 7 * 7 * 16 * 9, vectors = points / 16, freq = spec.cpu.frequency_ghz * 1e9;
  const Estimate folded = estimate(*task.anchor, *kw_inner, spec, 1);
  const Estimate branching = estimate(*task.anchor, *kh_inner, spec, 1);
  EXPECT_NEAR(branching.penalty_s - folded.penalty_s, (1 - 2.0 / 7) * vectors / freq, 1e-3 * vectors / freq);
}

// An element-wise consumer left out of the write-back costs a pass of its
// own: the anchor's result read back and the consumer's written, at the
// bandwidth of the level both fit in (zen4_server: 2 x 192 KiB in its 1 MiB
// L2's usable three quarters; 2 x 768 KiB in L3). Construction fuses it.
TEST(AnalyticModel, AnUnfusedConsumerPaysAPassOverTheResult) {
  const HwSpec spec = spec_with_scatter(1);
  for (const auto& [M, level] : std::vector<std::pair<const char*, size_t>>{{"64", 1}, {"256", 2}}) {
    const Task task = make_task(
        make_operator("dense", {{"M", M}, {"N", "768"}, {"K", "64"}, {"epilogue", "bias_gelu"}}), spec, 1);
    const State top = construct_states(task, 1, {})[0].state;
    EXPECT_TRUE(top->fuse) << M << ": " << top->str();
    auto unfused = std::make_shared<StateData>(*top);
    unfused->fuse = false;
    const double bytes = 4.0 * std::stod(M) * 768;
    const double pass_s = 2 * bytes / (spec.cpu.caches[level].bandwidth_gbs * 1e9);
    EXPECT_NEAR(estimate(*task.anchor, *unfused, spec, 1).penalty_s - estimate(*task.anchor, *top, spec, 1).penalty_s,
                pass_s, pass_s * 1e-9)
        << M;
  }
}

TEST(AnalyticModel, APaddedReadInPlaceBringsOnlyTheTensorsRows) {
  // A 3x3 depthwise convolution over 960 channels, 7x7 outputs: padded by
  // one, its input is 9x9 rows with padding, 7x7 without. Register tiles of
  // a column of 7 outputs by 32 channels, swept along the columns, read the
  // input once. Read in place (through a guard), only the 7x7 rows in
  // memory reach L1: against the same convolution on a 9x9 input without
  // padding, with the same tiles, the input's 81 rows count 49, beside the
  // 9 rows of weights and the output's 49 rows, written and read (188 rows'
  // traffic against 156). A materialized padded copy is read whole.
  const HwSpec spec = load_hwspec("zen4_server");
  auto l1_traffic = [&](const char* size, const char* pad, bool materialized) {
    const Task task = make_task(make_operator("depthwise_conv2d", {{"N", "1"}, {"H", size}, {"W", size}, {"C", "960"},
                                                                   {"KH", "3"}, {"KW", "3"}, {"stride", "1"},
                                                                   {"pad", pad}}),
                                spec, 1);
    std::vector<std::string> steps = {"vectorize 3 16", "tile_grow 3 3"};
    steps.insert(steps.end(), 6, "tile_grow 3 1");
    steps.push_back("reorder 3 2");  // the columns innermost
    if (materialized) steps.push_back("materialize 0 1");
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][1] * 100 + s->tile[3][3], 732) << s->str();
    EXPECT_EQ(s->order[3][3], 2) << s->str();
    EXPECT_EQ(s->materialized(0), materialized) << s->str();
    return estimate(*task.anchor, *s, spec, 1).level_s.at(0);
  };
  const double unpadded = l1_traffic("9", "0", false);
  EXPECT_NEAR(l1_traffic("7", "1", false) / unpadded, 156.0 / 188.0, 0.02);
  EXPECT_NEAR(l1_traffic("7", "1", true) / unpadded, 1.0, 0.02);
}

TEST(AnalyticModel, AMaterializedCopyOfRowsManyLinesLongIsReadAsLaidOutALineApart) {
  // The same convolution over 1024 channels: its pixels, 4 KB apart in
  // place, all start in one L1 set, and a tile's window (9 rows of 3
  // pixels) crowds it. A materialized copy lays them out a line further
  // apart (scratch_row_pitch), which the model reads as lowering lays it
  // out: per channel, the traffic of a copy of 1040 channels, whose rows
  // are 65 lines long anyway; in place, several times more.
  const HwSpec spec = load_hwspec("zen4_server");
  auto l1_traffic_per_channel = [&](int channels, bool materialized) {
    const Task task = make_task(
        make_operator("depthwise_conv2d", {{"N", "1"}, {"H", "7"}, {"W", "7"}, {"C", std::to_string(channels)},
                                           {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"}}),
        spec, 1);
    std::vector<std::string> steps = {"vectorize 3 16", "tile_grow 3 3"};
    steps.insert(steps.end(), 6, "tile_grow 3 1");
    steps.push_back("reorder 3 2");
    if (materialized) steps.push_back("materialize 0 1");
    const State s = apply_all(task, steps);
    EXPECT_EQ(s->tile[3][1] * 100 + s->tile[3][3], 732) << s->str();
    EXPECT_EQ(s->materialized(0), materialized) << s->str();
    const Schedule sched = schedule_with_state(task, s);
    for (const StageSchedule& stage : sched.stages)
      if (stage.tensor.get() == task.anchor->accesses[0].tensor.get())
        EXPECT_EQ(stage.row_pitch, materialized && channels == 1024 ? 1040 : 0) << channels;
    return estimate(*task.anchor, *s, spec, 1).level_s.at(0) / channels;
  };
  const double laid_out = l1_traffic_per_channel(1024, true);
  EXPECT_NEAR(laid_out / l1_traffic_per_channel(1040, true), 1.0, 0.05);
  EXPECT_GT(l1_traffic_per_channel(1024, false) / laid_out, 3.0);
  // Laid out at its own row length, an access keeps its strides.
  const Task task = make_task(make_operator("depthwise_conv2d", {{"N", "1"}, {"H", "7"}, {"W", "7"}, {"C", "1024"},
                                                                  {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}),
                              spec, 1);
  const Access& x = task.anchor->accesses[0];
  EXPECT_EQ(with_row_pitch(x, 1024).stride, x.stride);
  EXPECT_EQ(*with_row_pitch(x, 1040).stride[1], *x.stride[1] / 1024 * 1040);
}

}  // namespace

}  // namespace loom
