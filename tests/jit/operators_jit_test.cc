// Every operator's generated CPU kernel against the reference executor, at
// awkward sizes (1, primes, non-multiples of the vector width), on one and
// on two threads, and for several target specs (vector widths).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include "test_util.h"

namespace loom {
namespace {

using Case = test::OpCase;
using test::case_name;


std::vector<Case> cases() {
  return {
      {"matmul", {{"M", "1"}, {"N", "1"}, {"K", "1"}}},
      {"matmul", {{"M", "17"}, {"N", "31"}, {"K", "13"}}},
      {"matmul", {{"M", "64"}, {"N", "48"}, {"K", "33"}}},
      {"matmul", {{"M", "3"}, {"N", "129"}, {"K", "7"}}},
      {"batch_matmul", {{"B", "3"}, {"M", "5"}, {"N", "19"}, {"K", "11"}}},
      {"batch_matmul", {{"B", "1"}, {"M", "1"}, {"N", "16"}, {"K", "2"}}},
      {"dense", {{"M", "7"}, {"N", "37"}, {"K", "23"}}},
      {"dense", {{"M", "5"}, {"N", "17"}, {"K", "9"}, {"epilogue", "bias"}}},
      {"dense", {{"M", "2"}, {"N", "33"}, {"K", "16"}, {"epilogue", "bias_relu"}}},
      {"dense", {{"M", "3"}, {"N", "19"}, {"K", "5"}, {"epilogue", "bias_gelu"}}},
      {"conv2d", {{"N", "1"}, {"H", "7"}, {"W", "9"}, {"CI", "3"}, {"CO", "17"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}},
      {"conv2d", {{"N", "2"}, {"H", "11"}, {"W", "5"}, {"CI", "8"}, {"CO", "12"}, {"KH", "3"}, {"KW", "2"},
                  {"stride", "2"}, {"pad", "2"}, {"dilation", "2"}, {"groups", "4"}}},
      {"conv2d", {{"N", "1"}, {"H", "6"}, {"W", "7"}, {"CI", "5"}, {"CO", "19"}, {"KH", "1"}, {"KW", "1"}}},
      {"conv2d", {{"N", "2"}, {"H", "9"}, {"W", "8"}, {"CI", "6"}, {"CO", "9"}, {"KH", "3"}, {"KW", "3"},
                  {"stride", "2"}, {"pad", "1"}, {"groups", "3"}, {"layout", "NCHW"}}},
      {"conv2d", {{"N", "1"}, {"H", "5"}, {"W", "19"}, {"CI", "2"}, {"CO", "3"}, {"KH", "2"}, {"KW", "5"},
                  {"dilation", "2"}, {"layout", "NCHW"}}},
      {"depthwise_conv2d", {{"N", "1"}, {"H", "9"}, {"W", "7"}, {"C", "19"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}},
      {"depthwise_conv2d", {{"N", "2"}, {"H", "8"}, {"W", "11"}, {"C", "5"}, {"KH", "5"}, {"KW", "3"},
                            {"stride", "2"}, {"pad", "2"}, {"layout", "NCHW"}}},
      {"conv2d_transpose", {{"N", "1"}, {"H", "4"}, {"W", "3"}, {"CI", "7"}, {"CO", "5"}, {"KH", "4"}, {"KW", "4"},
                            {"stride", "2"}, {"pad", "1"}}},
      {"conv2d_transpose", {{"N", "2"}, {"H", "3"}, {"W", "5"}, {"CI", "3"}, {"CO", "17"}, {"KH", "3"}, {"KW", "2"},
                            {"stride", "3"}}},
      {"pool2d", {{"N", "1"}, {"H", "13"}, {"W", "11"}, {"C", "19"}, {"KH", "3"}, {"KW", "3"}, {"stride", "2"}, {"pad", "1"}}},
      {"pool2d", {{"N", "2"}, {"H", "7"}, {"W", "7"}, {"C", "3"}, {"KH", "2"}, {"KW", "2"}, {"stride", "2"}, {"kind", "avg"}}},
      {"softmax", {{"M", "1"}, {"N", "1"}}},
      {"softmax", {{"M", "13"}, {"N", "37"}}},
      {"layernorm", {{"M", "5"}, {"N", "129"}}},
      {"layernorm", {{"M", "1"}, {"N", "3"}}},
      {"reduce", {{"M", "7"}, {"N", "33"}}},
      {"reduce", {{"M", "1"}, {"N", "101"}, {"kind", "max"}}},
      {"reduce", {{"M", "9"}, {"N", "17"}, {"kind", "l2"}}},
      {"gelu", {{"M", "3"}, {"N", "45"}}},
      {"bias_add_gelu", {{"M", "4"}, {"N", "37"}}},
      {"channel_affine_relu", {{"N", "1"}, {"H", "3"}, {"W", "5"}, {"C", "19"}}},
      {"conv2d", {{"N", "1"}, {"H", "7"}, {"W", "6"}, {"CI", "4"}, {"CO", "21"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}, {"epilogue", "bn_relu"}}},
      {"bias_add_relu", {{"M", "1"}, {"N", "1"}}},
      {"bias_add_relu", {{"M", "6"}, {"N", "23"}}},
  };
}

class EveryOperator : public ::testing::TestWithParam<Case> {};

TEST_P(EveryOperator, MatchesReferenceOnOneAndTwoThreads) {
  Operator op = make_operator(GetParam().op, GetParam().params);
  for (int threads : {1, 2}) {
    CompileOptions options;
    options.threads = threads;
    CheckResult r = test::compile_and_check(op, options);
    EXPECT_TRUE(r.ok) << "threads=" << threads << " max_rel_err=" << r.max_rel_err;
    EXPECT_GT(r.points_checked, 0);
  }
}

TEST_P(EveryOperator, MatchesReferenceForOtherVectorWidths) {
  Operator op = make_operator(GetParam().op, GetParam().params);
  for (const char* spec : {"haswell_avx2", "skylake_avx512"}) {
    CompileOptions options;
    options.target = load_hwspec(spec);
    CheckResult r = test::compile_and_check(op, options);
    EXPECT_TRUE(r.ok) << spec << " max_rel_err=" << r.max_rel_err;
  }
}

INSTANTIATE_TEST_SUITE_P(Jit, EveryOperator, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return case_name(info.param); });

TEST(DynamicShapes, OneKernelServesManySizes) {
  Var M("M"), N("N"), K("K");
  Operator op = ops::dense(M, N, K, ops::Epilogue::BiasGelu);
  ASSERT_EQ(op.size_vars.size(), 3u);
  Kernel kernel = compile(op);
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{1, 1, 1}, {5, 17, 3}, {16, 33, 64}, {31, 2, 129}}) {
    auto in = random_inputs(op, 11, sizes);
    std::vector<Buffer> out;
    for (const auto& s : output_shapes(op, in)) out.push_back(Buffer::allocate(s));
    kernel.run(in, out);
    CheckResult r = check_against_reference(op, in, out);
    EXPECT_TRUE(r.ok) << "M,N,K=" << sizes[0] << "," << sizes[1] << "," << sizes[2] << " err " << r.max_rel_err;
  }
}

TEST(DynamicShapes, SymbolicSoftmax) {
  Var M("M"), N("N");
  Operator op = ops::softmax(M, N);
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{1, 1}, {3, 17}, {8, 64}})
    EXPECT_TRUE(test::compile_and_check(op, {}, sizes).ok);
}

TEST(Kernel, ReportsAndIr) {
  Kernel k = compile(make_operator("matmul", {{"M", "32"}, {"N", "32"}, {"K", "32"}}));
  EXPECT_EQ(k.report().strategy, "construct");  // fast by default
  EXPECT_GT(k.report().codegen_ms, 0);
  EXPECT_NE(k.report().loop_ir.find("vectorized for"), std::string::npos);
  const std::string host_vector = "<" + std::to_string(detect_host_cpu().cpu.fp32_lanes()) + " x float>";
  EXPECT_NE(k.llvm_ir().find(host_vector), std::string::npos) << "expected explicit vector code: " << host_vector;
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// Index arithmetic in generated code follows the IR's floor semantics for
// negative operands, in vector lanes and in the scalar remainder alike.
TEST(Codegen, FloorDivisionAndModuloOfNegatives) {
  auto X = te::placeholder({3, 37}, "X");
  auto Y = te::compute({3, 37}, [&](const std::vector<Var>& a) {
    Expr t = a[1] - 17 - a[0];
    return X(a[0], a[1]) + cast(DType::f32(), (t / 4) * 100 + t % 4 + (t / -3) * 7 + t % -3);
  }, "Y");
  Operator op;
  op.name = "floor_arith";
  op.inputs = {X};
  op.outputs = {Y};
  op.flops = Expr(3 * 37);
  EXPECT_TRUE(test::compile_and_check(op).ok);
}

// A select guarding an out-of-bounds read must not perform that read, also
// when the guard varies across vector lanes.
TEST(Codegen, LaneVaryingGuardedReads) {
  auto X = te::placeholder({4, 16}, "X");
  auto Y = te::compute({4, 40}, [&](const std::vector<Var>& a) {
    return select(a[1] >= 12 && a[1] < 28, X(a[0], a[1] - 12), -1.0f);
  }, "Y");
  Operator op;
  op.name = "guarded";
  op.inputs = {X};
  op.outputs = {Y};
  op.flops = Expr(1);
  EXPECT_TRUE(test::compile_and_check(op).ok);
}


// `f` of each of `xs` by a kernel compiled for `target`, the values in two
// rows: full vectors and a remainder. `ir`, unless null, receives the kernel's LLVM IR.
std::vector<float> unary_kernel(const std::function<Expr(const Expr&)>& f, const std::vector<float>& xs,
                                const HwSpec& target, std::string* ir) {
  const int64_t n = int64_t(xs.size());
  auto X = te::placeholder({2, n}, "X");
  auto Y = te::compute({2, n}, [&](const std::vector<Var>& a) { return f(X(a[0], a[1])); }, "Y");
  Operator op;
  op.name = "unary";
  op.inputs = {X};
  op.outputs = {Y};
  op.flops = Expr(2 * n);
  Buffer in = Buffer::allocate({2, n});
  std::copy(xs.begin(), xs.end(), in.as<float>());
  std::copy(xs.begin(), xs.end(), in.as<float>() + n);
  CompileOptions options;
  options.strategy = "default";
  options.target = target;
  Buffer out = Buffer::allocate({2, n});
  Kernel k = compile(op, options);
  k.run({in}, {out});
  if (ir) *ir = k.llvm_ir();
  return {out.as<float>(), out.as<float>() + 2 * n};
}

// The host's spec, AVX2's, and AVX's without AVX2 (each a lowering of exp of its own: a table of 2^(j/16) with
// AVX-512, of 2^(j/8) with AVX2, a polynomial over octaves without).
std::vector<HwSpec> vector_math_targets() {
  HwSpec avx = load_hwspec("haswell_avx2");
  avx.name = "haswell_avx";
  avx.cpu.isa = {"sse4.2", "avx", "fma"};
  return {detect_host_cpu(), load_hwspec("haswell_avx2"), avx};
}

bool has(const HwSpec& target, const std::string& feature) {
  const auto& isa = target.cpu.isa;
  return std::find(isa.begin(), isa.end(), feature) != isa.end();
}

// A vectorized loop that stores values read from other buffers runs four
// vectors a step, their loads before the first store, so that no load
// waits behind a store to the same address modulo 4 KiB (an output 64
// bytes past its input). The main loop of 200 = 3 x 64 + 8 columns, then
// its remainder; every element still right.
TEST(Codegen, AVectorizedLoopLoadsFourVectorsBeforeItsFirstStore) {
  std::vector<float> xs(200);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(i) * 0.25f - 7;
  for (const HwSpec& target : vector_math_targets()) {
    std::string ir;
    const std::vector<float> ys = unary_kernel([](const Expr& x) { return x * 3.0f + 1.0f; }, xs, target, &ir);
    for (size_t i = 0; i < ys.size(); ++i) EXPECT_EQ(ys[i], xs[i % xs.size()] * 3.0f + 1.0f) << target.name << " " << i;
    // In the first basic block that stores a vector, the vector loads before that store.
    std::istringstream lines(ir);
    int loads = 0;
    bool stored = false;
    for (std::string line; !stored && std::getline(lines, line);) {
      if (line.find(':') != std::string::npos && line.find("; preds") != std::string::npos) loads = 0;
      if (line.find("load <") != std::string::npos) ++loads;
      stored = line.find("store <") != std::string::npos;
    }
    EXPECT_TRUE(stored) << target.name;
    EXPECT_GE(loads, 4) << target.name << ": vector loads before the first vector store";
  }
}

// exp over its whole float range: within 2.5e-7 relative where the result
// is a normal float (1e-4 in the last third of an octave before float
// overflows), 0 below (never a denormal: arithmetic on them is slow), +inf
// above, NaN for NaN.
TEST(Codegen, ExpOverItsWholeRange) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {-inf, -1e30f, -200, -104, -100, -90, -87.5f, -87, -50, -10.5f, -1, -1e-8f, 0, 1e-8f,
                           0.3465f, 0.35f, 1, 10, 50, 87, 88, 88.3f, 88.5f, 88.7f, 88.8f, 89, 100, 1e30f, inf,
                           std::numeric_limits<float>::quiet_NaN()};
  for (float x = -87; x < 88; x += 0.0137f) xs.push_back(x);
  for (float x = -87.7f; x < -87; x += 0.0011f) xs.push_back(x);  // about the smallest normal result
  for (const HwSpec& target : vector_math_targets()) {
    std::string ir;
    const std::vector<float> ys = unary_kernel([](const Expr& x) { return exp(x); }, xs, target, &ir);
    if (has(target, "avx512f")) EXPECT_NE(ir.find("permvar"), std::string::npos) << "16-lane exp by 2^(j/16)";
    else if (has(target, "avx2")) EXPECT_NE(ir.find("avx2.permps"), std::string::npos) << "8-lane exp by 2^(j/8)";
    else EXPECT_EQ(ir.find("perm"), std::string::npos) << target.name;
    for (size_t i = 0; i < ys.size(); ++i) {
      const float x = xs[i % xs.size()], y = ys[i], want = std::exp(x);
      if (std::isnan(x)) EXPECT_TRUE(std::isnan(y)) << target.name;
      else if (want < std::numeric_limits<float>::min()) EXPECT_EQ(y, 0.0f) << target.name << " exp(" << x << ")";
      else if (std::isinf(want)) EXPECT_TRUE(std::isinf(y)) << target.name << " exp(" << x << ") = " << y;
      // AVX2's 2^n from exponent bits stops at 2^127: the polynomial covers the last third of an octave.
      else EXPECT_NEAR(y / want, 1.0f, x > 88.3f ? 1e-4f : 2.5e-7f) << target.name << " exp(" << x << ") = " << y;
    }
  }
}

// erf over its whole float range: within 5e-7 of the exact value, exactly
// +-1 from |x| = 4 on (where exp(-x^2) would reach denormals past 9.3),
// NaN for NaN.
TEST(Codegen, ErfOverItsWholeRange) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {-inf, -1e30f, -100, -9.5f, -9.3f, -4.5f, -4, -3.9f, -1e-30f, 0, 1e-30f, 3.9f, 4, 4.5f,
                           9.3f, 9.5f, 13, 100, 1e30f, inf, std::numeric_limits<float>::quiet_NaN()};
  for (float x = -6; x < 6; x += 0.0037f) xs.push_back(x);
  for (const HwSpec& target : vector_math_targets()) {
    const std::vector<float> ys = unary_kernel([](const Expr& x) { return erf(x); }, xs, target, nullptr);
    for (size_t i = 0; i < ys.size(); ++i) {
      const float x = xs[i % xs.size()], y = ys[i];
      if (std::isnan(x)) EXPECT_TRUE(std::isnan(y)) << target.name;
      else if (std::fabs(x) >= 4) EXPECT_EQ(y, std::copysign(1.0f, x)) << target.name << " erf(" << x << ")";
      else EXPECT_NEAR(y, std::erf(double(x)), 5e-7) << target.name << " erf(" << x << ")";
    }
  }
}

}  // namespace
}  // namespace loom
