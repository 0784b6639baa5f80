// Row fusion (schedule/row_fusion.h): which operators qualify, and fused
// kernels against the reference executor at awkward and symbolic sizes.
#include "driver/compile_schedule.h"
#include "ops/op_builder.h"
#include "schedule/row_fusion.h"
#include "schedule/schedule.h"
#include "test_util.h"

#include <map>
#include <regex>
#include <sstream>

namespace loom {
namespace {

using te::compute;
using te::placeholder;
using te::reduce_axis;

// Softmax over the last axis of a [B, T, N] tensor: two row axes.
Operator batched_softmax(Expr B, Expr T, Expr N) {
  auto X = placeholder({B, T, N}, "X");
  auto k = reduce_axis(N, "k");
  auto s = compute({B, T}, [&](const std::vector<Var>& a) { return te::sum(exp(X(a[0], a[1], k.var)), {k}); }, "s");
  auto Y = compute({B, T, N}, [&](const std::vector<Var>& a) { return exp(X(a[0], a[1], a[2])) / s(a[0], a[1]); },
                   "Y");
  return ops::finish_operator("batched_softmax", {X}, {Y}, 3 * B * T * N);
}

// Each row is normalized by the next row's maximum: rows depend on each
// other, so the operator must not be fused by rows.
Operator next_row_normalized(Expr M, Expr N) {
  auto X = placeholder({M, N}, "X");
  auto k = reduce_axis(N, "k");
  auto m = compute({M}, [&](const std::vector<Var>& a) { return te::max(X(a[0], k.var), {k}); }, "m");
  auto Y = compute({M, N}, [&](const std::vector<Var>& a) { return X(a[0], a[1]) / m((a[0] + 1) % M); }, "Y");
  return ops::finish_operator("next_row_normalized", {X}, {Y}, M * N);
}

TEST(RowFusion, RowOperatorsQualifyAndOthersDoNot) {
  EXPECT_EQ(row_fusion_axes(ops::softmax(64, 77)), 1);
  EXPECT_EQ(row_fusion_axes(ops::layernorm(Var("M"), Var("N"))), 1);
  EXPECT_EQ(row_fusion_axes(batched_softmax(2, Var("T"), 33)), 2);
  EXPECT_EQ(row_fusion_axes(next_row_normalized(9, 17)), 0);
  EXPECT_EQ(row_fusion_axes(ops::reduce(8, 9, ops::ReduceKind::Sum)), 0);  // one stage
  EXPECT_EQ(row_fusion_axes(ops::reduce(8, 9, ops::ReduceKind::L2)), 0);   // nothing wider reads it back
  EXPECT_EQ(row_fusion_axes(make_operator("dense", {{"M", "8"}, {"N", "8"}, {"K", "8"}, {"epilogue", "bias_gelu"}})),
            0);
}

// The kernel is one parallel loop over rows and matches the reference.
void expect_fused_and_correct(const Operator& op, const std::vector<int64_t>& sizes, const std::string& strategy,
                              int threads) {
  CompileOptions o;
  o.strategy = strategy;
  o.threads = threads;
  Kernel k = compile(op, o);
  const std::string& ir = k.report().loop_ir;
  EXPECT_NE(ir.find("parallel for row_task"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("parallel for"), ir.rfind("parallel for")) << "more than one pass:\n" << ir;
  // A row's last, partial vector runs as one masked vector where the target masks memory operations.
  std::istringstream lines(ir);
  for (std::string line; std::getline(lines, line);)
    if (line.find("vectorized for") != std::string::npos) EXPECT_NE(line.find(" masked"), std::string::npos) << line;
  CheckResult r = test::run_and_check(op, k, random_inputs(op, 5, sizes));
  EXPECT_TRUE(r.ok) << op.name << " " << strategy << " threads=" << threads << " err " << r.max_rel_err;
}

TEST(RowFusion, SoftmaxAndLayernormAtAwkwardSizes) {
  for (int64_t m : {1, 3, 37})
    for (int64_t n : {1, 3, 5, 11, 17, 43, 77, 129, 1000})
      for (const char* strategy : {"construct", "default"}) {
        expect_fused_and_correct(ops::softmax(m, n), {}, strategy, 2);
        expect_fused_and_correct(ops::layernorm(m, n), {}, strategy, 1);
      }
}

TEST(RowFusion, SymbolicRowsAndColumns) {
  Var M("M"), N("N");
  for (const Operator& op : {ops::softmax(M, N), ops::layernorm(M, N)})
    for (std::vector<int64_t> sizes : {std::vector<int64_t>{1, 1}, {5, 33}, {64, 768}, {3, 1031}})
      expect_fused_and_correct(op, sizes, "construct", 2);
  Var T("T");
  for (int64_t t : {1, 7, 40}) expect_fused_and_correct(batched_softmax(3, T, 45), {t}, "construct", 2);
}

TEST(RowFusion, LanesCombineWholeVectorsFirst) {
  // A row of 43 in vectors of W with an odd number of accumulator vectors:
  // the halvings read whole vectors at whole-vector offsets (a load that
  // straddles two vector stores waits for both) until one vector is left.
  for (int64_t n : {43, 77, 129}) {
    const Operator op = ops::softmax(64, n);
    const Kernel k = compile(op, CompileOptions{});
    const std::string ir = k.report().loop_ir;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(ir, m, std::regex(R"(vectorized for rl in \[0, (\d+)\))"))) << ir;
    const int64_t W = std::stoll(m[1]);
    int offsets = 0;
    const std::regex halving(R"(row_acc\[\(rh \+ (\d+)\)\])");
    for (auto it = std::sregex_iterator(ir.begin(), ir.end(), halving); it != std::sregex_iterator(); ++it, ++offsets) {
      const int64_t offset = std::stoll((*it)[1]);
      if (offset >= W) EXPECT_EQ(offset % W, 0) << "n=" << n << " W=" << W << "\n" << ir;
    }
    EXPECT_GT(offsets, 0) << ir;
    EXPECT_TRUE(test::run_and_check(op, k, random_inputs(op, 7)).ok) << n;
  }
}

// Each stage's phase, by name.
std::map<std::string, int> phases_by_name(const Operator& op) {
  const std::vector<te::Tensor> stages = compute_stages(op);
  const std::vector<int> phase = row_phases(stages);
  std::map<std::string, int> named;
  for (size_t i = 0; i < stages.size(); ++i) named[stages[i].name()] = phase[i];
  return named;
}

TEST(RowFusion, PhasesFollowTheReductionsARowWaitsFor) {
  // softmax: the max; exp(x - max) and its sum; the quotient.
  const std::map<std::string, int> softmax = phases_by_name(ops::softmax(8, 9));
  ASSERT_EQ(softmax.size(), 4u);
  EXPECT_EQ(softmax.at("row_max"), 0);
  EXPECT_EQ(softmax.at("exp"), 1);
  EXPECT_EQ(softmax.at("row_sum"), 1);
  EXPECT_EQ(softmax.at("Y"), 2);
  // layernorm: the sum; the mean (element-wise on it) and the squared deviations' sum; rstd and Y.
  const std::map<std::string, int> layernorm = phases_by_name(ops::layernorm(8, 9));
  EXPECT_EQ(layernorm.at("row_sum"), 0);
  EXPECT_EQ(layernorm.at("mean"), 1);
  EXPECT_EQ(layernorm.at("sq_sum"), 1);
  EXPECT_EQ(layernorm.at("rstd"), 2);
  EXPECT_EQ(layernorm.at("Y"), 2);
}

TEST(RowFusion, RowsArePipelinedWhenTheirReductionsAreShort) {
  for (const char* name : {"zen4_server", "haswell_avx2"}) {
    const HwSpec hw = load_hwspec(name);
    EXPECT_TRUE(default_schedule(ops::softmax(64, 43), hw).row_pipelined) << name;
    EXPECT_TRUE(default_schedule(ops::layernorm(64, 128), hw).row_pipelined) << name;
    EXPECT_FALSE(default_schedule(ops::softmax(64, 4096), hw).row_pipelined) << name;
    EXPECT_FALSE(default_schedule(ops::layernorm(64, 1024), hw).row_pipelined) << name;
  }
  // A longer chain of dependent operations after each reduction: longer rows still gain.
  HwSpec slow = load_hwspec("zen4_server");
  EXPECT_FALSE(default_schedule(ops::softmax(64, 1024), slow).row_pipelined);
  slow.cpu.fma_latency *= 4;
  EXPECT_TRUE(default_schedule(ops::softmax(64, 1024), slow).row_pipelined);
}

// Pipelined or not, in tasks of any number of rows (the last one partial),
// with one or two row axes, fixed or symbolic: the reference's results.
TEST(RowFusion, PipelinedRowsMatchTheReference) {
  const HwSpec hw = detect_host_cpu();
  Var M("M"), T("T");
  struct Case {
    Operator op;
    std::vector<int64_t> sizes;
  };
  std::vector<Case> cases;
  for (int64_t n : {1, 17, 43, 600}) {
    cases.push_back({ops::softmax(5, n), {}});
    cases.push_back({ops::layernorm(5, n), {}});
  }
  cases.push_back({ops::softmax(M, 77), {1}});
  cases.push_back({ops::layernorm(M, 33), {7}});
  cases.push_back({batched_softmax(3, T, 45), {5}});
  for (const Case& c : cases)
    for (bool pipelined : {false, true})
      for (int64_t rows_per_task : {1, 2, 4, 1 << 20}) {
        Schedule s = default_schedule(c.op, hw);
        ASSERT_GT(s.row_axes, 0) << c.op.name;
        s.row_pipelined = pipelined;
        s.rows_per_task = rows_per_task;
        const Kernel k = compile_schedule(c.op, s, hw, 2);
        EXPECT_EQ(k.report().loop_ir.find("row_in_task >= 1") != std::string::npos, pipelined) << k.report().loop_ir;
        const CheckResult r = test::run_and_check(c.op, k, random_inputs(c.op, 11, c.sizes));
        EXPECT_TRUE(r.ok) << c.op.name << " pipelined=" << pipelined << " rows_per_task=" << rows_per_task << " err "
                          << r.max_rel_err;
      }
}

// Each row's slot in a row-local buffer is whole cache lines: a vector access
// to one row (a masked remainder's full-width load included) never reaches
// into the next row's slot, whose stores it would wait on.
TEST(RowFusion, RowSlotsAreWholeCacheLines) {
  const HwSpec hw = load_hwspec("zen4_server");
  const int64_t line_elems = hw.cpu.caches.front().line_bytes / 4;
  for (int64_t n : {1, 17, 43, 64, 600}) {
    const Operator op = ops::softmax(64, n);
    Schedule s = default_schedule(op, hw);
    s.row_pipelined = true;
    const std::string ir = compile_schedule(op, s, hw, 1).report().loop_ir;
    const std::regex row_buffer(R"(allocate exp_row\[(\d+)\])");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(ir, m, row_buffer)) << ir;
    const int64_t elems = std::stoll(m[1]), per_slot = (n + line_elems - 1) / line_elems * line_elems;
    EXPECT_EQ(elems % per_slot, 0) << "n=" << n << ": " << elems;
    EXPECT_GE(elems / per_slot, 3) << "n=" << n << ": one slot per phase in flight";
    EXPECT_NE(ir.find("* " + std::to_string(per_slot) + ")"), std::string::npos) << "n=" << n << ":\n" << ir;
  }
}

TEST(RowFusion, DependentRowsStayStageByStage) {
  CompileOptions o;
  o.threads = 2;
  Operator op = next_row_normalized(9, 17);
  Kernel k = compile(op, o);
  EXPECT_EQ(k.report().loop_ir.find("row_task"), std::string::npos);
  EXPECT_TRUE(test::run_and_check(op, k, random_inputs(op, 3)).ok);
}

}  // namespace
}  // namespace loom
