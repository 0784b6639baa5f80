// Operator definitions, checked through the reference executor against
// independent hand-written loops (so a wrongly defined operator cannot agree
// with itself), plus parameter validation.
#include <cmath>

#include "ir/size_binding.h"
#include "test_util.h"

namespace loom {
namespace {

float at(const Buffer& b, std::initializer_list<int64_t> idx) {
  int64_t flat = 0, d = 0;
  for (int64_t i : idx) flat = flat * b.shape()[d++] + i;
  return b.as<float>()[flat];
}

void expect_close(const Buffer& got, const std::vector<double>& want) {
  ASSERT_EQ(got.numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.as<float>()[i], want[i], 1e-4 * std::max(1.0, std::fabs(want[i]))) << "element " << i;
}

Buffer reference_output(const Operator& op, const std::vector<Buffer>& in) { return evaluate_reference(op, in)[0]; }

TEST(Reference, Matmul) {
  Operator op = make_operator("matmul", {{"M", "5"}, {"N", "3"}, {"K", "7"}});
  auto in = random_inputs(op, 1);
  std::vector<double> want;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 7; ++k) s += double(at(in[0], {i, k})) * at(in[1], {k, j});
      want.push_back(s);
    }
  expect_close(reference_output(op, in), want);
}

TEST(Reference, DenseBiasGelu) {
  Operator op = make_operator("dense", {{"M", "3"}, {"N", "4"}, {"K", "5"}, {"epilogue", "bias_gelu"}});
  auto in = random_inputs(op, 2);
  std::vector<double> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = at(in[2], {j});
      for (int k = 0; k < 5; ++k) s += double(at(in[0], {i, k})) * at(in[1], {j, k});
      want.push_back(0.5 * s * (1 + std::erf(s / std::sqrt(2.0))));
    }
  expect_close(reference_output(op, in), want);
}

// Naive grouped, dilated, strided, padded convolution in either layout.
std::vector<double> naive_conv(const Buffer& x, const Buffer& w, const ops::Conv2dParams& p) {
  int64_t OH = (p.H + 2 * p.pad - p.dilation * (p.KH - 1) - 1) / p.stride + 1;
  int64_t OW = (p.W + 2 * p.pad - p.dilation * (p.KW - 1) - 1) / p.stride + 1;
  int64_t cig = p.CI / p.groups, cog = p.CO / p.groups;
  bool nhwc = p.layout == ops::Layout::NHWC;
  std::vector<double> y(p.N * OH * OW * p.CO);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t co = 0; co < p.CO; ++co)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = 0;
          for (int64_t rc = 0; rc < cig; ++rc)
            for (int64_t kh = 0; kh < p.KH; ++kh)
              for (int64_t kw = 0; kw < p.KW; ++kw) {
                int64_t ih = oh * p.stride + kh * p.dilation - p.pad, iw = ow * p.stride + kw * p.dilation - p.pad;
                if (ih < 0 || iw < 0 || ih >= p.H || iw >= p.W) continue;
                int64_t ci = (co / cog) * cig + rc;
                double xv = nhwc ? at(x, {n, ih, iw, ci}) : at(x, {n, ci, ih, iw});
                double wv = nhwc ? at(w, {kh, kw, rc, co}) : at(w, {co, rc, kh, kw});
                s += xv * wv;
              }
          int64_t flat = nhwc ? ((n * OH + oh) * OW + ow) * p.CO + co : ((n * p.CO + co) * OH + oh) * OW + ow;
          y[flat] = s;
        }
  return y;
}

TEST(Reference, Conv2dBothLayoutsGroupsDilation) {
  for (auto layout : {ops::Layout::NHWC, ops::Layout::NCHW}) {
    ops::Conv2dParams p;
    p.N = 2; p.H = 7; p.W = 6; p.CI = 4; p.CO = 6; p.KH = 3; p.KW = 2;
    p.stride = 2; p.pad = 1; p.dilation = 2; p.groups = 2; p.layout = layout;
    Operator op = ops::conv2d(p);
    auto in = random_inputs(op, 3);
    expect_close(reference_output(op, in), naive_conv(in[0], in[1], p));
  }
}

TEST(Reference, Conv2dBnReluAppliesScaleShiftRelu) {
  ops::Conv2dParams p;
  p.N = 1; p.H = 5; p.W = 4; p.CI = 3; p.CO = 4; p.KH = 3; p.KW = 3; p.pad = 1;
  p.epilogue = ops::Epilogue::BnRelu;
  Operator op = ops::conv2d(p);
  ASSERT_EQ(op.inputs.size(), 4u);
  auto in = random_inputs(op, 9);
  std::vector<double> y = naive_conv(in[0], in[1], p);
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::max(0.0, y[i] * at(in[2], {int64_t(i % 4)}) + at(in[3], {int64_t(i % 4)}));
  expect_close(reference_output(op, in), y);
}

TEST(Reference, DepthwiseIsGroupedConvWithOneChannelPerGroup) {
  ops::Conv2dParams p;
  p.N = 1; p.H = 6; p.W = 5; p.CI = 3; p.CO = 3; p.KH = 3; p.KW = 3; p.stride = 2; p.pad = 1;
  Operator op = ops::depthwise_conv2d(p);
  auto in = random_inputs(op, 4);
  // The depthwise weight [KH,KW,C] is the grouped conv weight [KH,KW,1,C].
  ops::Conv2dParams g = p;
  g.groups = 3;
  Buffer w = Buffer::borrow(in[1].data(), {3, 3, 1, 3});
  expect_close(reference_output(op, in), naive_conv(in[0], w, g));
}

TEST(Reference, Conv2dTransposeScattersEachInput) {
  ops::Conv2dParams p;
  p.N = 1; p.H = 3; p.W = 2; p.CI = 2; p.CO = 3; p.KH = 4; p.KW = 3; p.stride = 2; p.pad = 1;
  Operator op = ops::conv2d_transpose(p);
  auto in = random_inputs(op, 5);
  int64_t OH = (p.H - 1) * p.stride - 2 * p.pad + p.KH, OW = (p.W - 1) * p.stride - 2 * p.pad + p.KW;
  std::vector<double> y(OH * OW * p.CO, 0.0);
  for (int64_t ih = 0; ih < p.H; ++ih)
    for (int64_t iw = 0; iw < p.W; ++iw)
      for (int64_t ci = 0; ci < p.CI; ++ci)
        for (int64_t kh = 0; kh < p.KH; ++kh)
          for (int64_t kw = 0; kw < p.KW; ++kw)
            for (int64_t co = 0; co < p.CO; ++co) {
              int64_t oh = ih * p.stride - p.pad + kh, ow = iw * p.stride - p.pad + kw;
              if (oh < 0 || ow < 0 || oh >= OH || ow >= OW) continue;
              y[(oh * OW + ow) * p.CO + co] += double(at(in[0], {0, ih, iw, ci})) * at(in[1], {kh, kw, ci, co});
            }
  expect_close(reference_output(op, in), y);
}

TEST(Reference, PoolMaxAndAvg) {
  ops::Conv2dParams p;
  p.N = 1; p.H = 5; p.W = 5; p.CI = 2; p.KH = 3; p.KW = 3; p.stride = 2; p.pad = 1;
  for (auto kind : {ops::PoolKind::Max, ops::PoolKind::Avg}) {
    Operator op = ops::pool2d(p, kind);
    auto in = random_inputs(op, 6);
    std::vector<double> y;
    for (int oh = 0; oh < 3; ++oh)
      for (int ow = 0; ow < 3; ++ow)
        for (int c = 0; c < 2; ++c) {
          double m = -INFINITY, s = 0;
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              int ih = oh * 2 + kh - 1, iw = ow * 2 + kw - 1;
              if (ih < 0 || iw < 0 || ih >= 5 || iw >= 5) continue;
              m = std::max(m, double(at(in[0], {0, ih, iw, c})));
              s += at(in[0], {0, ih, iw, c});
            }
          y.push_back(kind == ops::PoolKind::Max ? m : s / 9.0);
        }
    expect_close(reference_output(op, in), y);
  }
}

TEST(Reference, SoftmaxLayernormReduce) {
  auto in = random_inputs(ops::layernorm(4, 9), 7);  // X, gamma, beta
  Buffer sm = reference_output(ops::softmax(4, 9), {in[0]});
  Buffer ln = reference_output(ops::layernorm(4, 9), in);
  Buffer l2 = reference_output(ops::reduce(4, 9, ops::ReduceKind::L2), {in[0]});
  for (int i = 0; i < 4; ++i) {
    double mx = -INFINITY, sum = 0, mean = 0, var = 0, sq = 0;
    for (int j = 0; j < 9; ++j) mx = std::max(mx, double(at(in[0], {i, j})));
    for (int j = 0; j < 9; ++j) sum += std::exp(at(in[0], {i, j}) - mx);
    for (int j = 0; j < 9; ++j) mean += at(in[0], {i, j}) / 9.0;
    for (int j = 0; j < 9; ++j) var += std::pow(at(in[0], {i, j}) - mean, 2) / 9.0;
    for (int j = 0; j < 9; ++j) sq += std::pow(at(in[0], {i, j}), 2);
    for (int j = 0; j < 9; ++j) {
      EXPECT_NEAR(at(sm, {i, j}), std::exp(at(in[0], {i, j}) - mx) / sum, 1e-6);
      double norm = (at(in[0], {i, j}) - mean) / std::sqrt(var + 1e-5);
      EXPECT_NEAR(at(ln, {i, j}), norm * at(in[1], {j}) + at(in[2], {j}), 1e-5);
    }
    EXPECT_NEAR(at(l2, {i}), std::sqrt(sq), 1e-5);
  }
}

TEST(Operators, ListingCoversEveryName) {
  std::vector<std::string> names;
  for (const auto& info : list_operators()) names.push_back(info.name);
  EXPECT_EQ(names, (std::vector<std::string>{"matmul", "batch_matmul", "dense", "conv2d", "depthwise_conv2d",
                                             "conv2d_transpose", "pool2d", "softmax", "layernorm", "reduce", "gelu",
                                             "bias_add_relu", "bias_add_gelu", "channel_affine_relu"}));
}

TEST(Operators, DefaultsAreFilled) {
  Operator op = make_operator("conv2d", {{"N", "1"}, {"H", "8"}, {"W", "8"}, {"CI", "4"}, {"CO", "4"}, {"KH", "3"}, {"KW", "3"}});
  EXPECT_EQ(op.params.at("stride"), "1");
  EXPECT_EQ(op.params.at("layout"), "NHWC");
  EXPECT_EQ(op.outputs[0].shape()[1].as_const_int(), 6);
  EXPECT_EQ(op.flops.as_const_int(), 2 * 6 * 6 * 4 * 4 * 9);
}

TEST(Operators, BadParametersNameTheValue) {
  using P = std::map<std::string, std::string>;
  EXPECT_USER_ERROR(make_operator("convolution", {}), "unknown operator 'convolution'");
  EXPECT_USER_ERROR(make_operator("matmul", P{{"M", "4"}, {"N", "4"}}), "missing parameter K");
  EXPECT_USER_ERROR(make_operator("matmul", P{{"M", "4"}, {"N", "4"}, {"K", "4"}, {"Q", "1"}}), "unknown parameter 'Q'");
  EXPECT_USER_ERROR(make_operator("matmul", P{{"M", "four"}, {"N", "4"}, {"K", "4"}}), "M='four' is not an integer");
  EXPECT_USER_ERROR(make_operator("matmul", P{{"M", "4x"}, {"N", "4"}, {"K", "4"}}), "M='4x' is not an integer");
  EXPECT_USER_ERROR(make_operator("matmul", P{{"M", "0"}, {"N", "4"}, {"K", "4"}}), "M=0 must be positive");
  EXPECT_USER_ERROR(make_operator("matmul", P{{"M", "-3"}, {"N", "4"}, {"K", "4"}}), "M=-3 must be positive");
  EXPECT_USER_ERROR(make_operator("matmul", P{{"M", "99999999999999"}, {"N", "4"}, {"K", "4"}}), "too large");
  EXPECT_USER_ERROR(make_operator("matmul", P{{"M", "1000000"}, {"N", "1000000"}, {"K", "4"}}), "sizes are too large");
  EXPECT_USER_ERROR(make_operator("dense", P{{"M", "4"}, {"N", "4"}, {"K", "4"}, {"epilogue", "swish"}}),
                    "epilogue='swish' is not one of none|bias|bias_relu|bias_gelu");
  EXPECT_USER_ERROR(make_operator("reduce", P{{"M", "4"}, {"N", "4"}, {"kind", "mean"}}), "kind='mean'");
}

// Found by fuzz_operator: flop counts of large convolutions overflowed int64
// (undefined behaviour) before any check. Each is a UserError now.
TEST(Operators, HugeParametersAreUserErrorsNotOverflows) {
  ops::Conv2dParams p;
  p.N = 1;
  p.H = p.W = int64_t(1) << 31;
  p.CI = p.CO = p.groups = int64_t(1) << 30;
  p.KH = p.KW = 21;
  p.pad = 10;
  EXPECT_USER_ERROR(ops::depthwise_conv2d(p), "overflow");
  p.groups = 1;
  EXPECT_USER_ERROR(ops::conv2d(p), "overflow");
  p.H = int64_t(1) << 40;
  EXPECT_USER_ERROR(ops::conv2d(p), "H=1099511627776 is above the limit 2147483648");
}

TEST(Operators, ShapesThatDoNotCompose) {
  using P = std::map<std::string, std::string>;
  P conv{{"N", "1"}, {"H", "4"}, {"W", "4"}, {"CI", "6"}, {"CO", "8"}, {"KH", "5"}, {"KW", "3"}};
  EXPECT_USER_ERROR(make_operator("conv2d", conv), "empty output: H=4 with pad=0 is smaller than the dilated kernel KH=5");
  conv["KH"] = "3";
  conv["groups"] = "4";
  EXPECT_USER_ERROR(make_operator("conv2d", conv), "groups=4 does not divide CI=6");
  conv["groups"] = "3";
  EXPECT_USER_ERROR(make_operator("conv2d", conv), "groups=3 does not divide CO=8");
  conv["groups"] = "1";
  conv["dilation"] = "3";
  EXPECT_USER_ERROR(make_operator("conv2d", conv), "empty output");
  EXPECT_USER_ERROR(make_operator("conv2d_transpose", {{"N", "1"}, {"H", "1"}, {"W", "1"}, {"CI", "1"}, {"CO", "1"},
                                                       {"KH", "2"}, {"KW", "2"}, {"pad", "1"}}),
                    "conv2d_transpose: empty output");
  EXPECT_USER_ERROR(make_operator("pool2d", {{"N", "1"}, {"H", "8"}, {"W", "8"}, {"C", "1"}, {"KH", "2"}, {"KW", "2"},
                                             {"pad", "2"}}),
                    "pad=2 must be at most half the window");
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

using te::compute;
using te::placeholder;

TEST(BuildOperator, DerivesSizesAndFlopsFromTheDefinitions) {
  Var M("M");
  te::Tensor A = placeholder({M, 8}, "A"), B = placeholder({8, 5}, "B");
  te::IterVar k = te::reduce_axis(8, "k");
  te::Tensor C = compute({M, 5}, [&](const std::vector<Var>& i) { return te::sum(A(i[0], k.var) * B(k.var, i[1]), {k}); },
                         "C");
  Operator op = te::build_operator("mm", {A, B}, {C});
  ASSERT_EQ(op.size_vars.size(), 1u);
  EXPECT_EQ(op.size_vars[0].name(), "M");
  // 5 M outputs, each 8 multiply-adds: 2 * 8 * 5 * M at M = 3.
  EXPECT_EQ(eval_int(op.flops, bind_sizes(op, std::vector<int64_t>{3})), 2 * 8 * 5 * 3);
}

TEST(BuildOperator, MistakesAreUserErrorsNamingTheTensorOrVariable) {
  Var M("M"), L("L");
  te::Tensor X = placeholder({M, 4}, "X");
  auto shifted = [&](int64_t by) {
    return compute({M, 4}, [&](const std::vector<Var>& i) { return X(i[0] + by, i[1]); }, "Y");
  };
  EXPECT_USER_ERROR(te::build_operator("shift", {X}, {shifted(1)}), "may read 'X' out of bounds: dimension 0");
  te::Tensor far = compute({M, 4}, [&](const std::vector<Var>& i) { return X(i[0] * 1000000, i[1]); }, "Far");
  EXPECT_USER_ERROR(te::build_operator("far", {X}, {far}), "compute 'Far' may read 'X' out of bounds");
  // Guarded, the same read is fine.
  te::Tensor guarded = compute({M, 4}, [&](const std::vector<Var>& i) {
    return te::if_then_else(i[0] + 1 < M, X(i[0] + 1, i[1]), Expr(0.0f));
  }, "G");
  EXPECT_NO_THROW(te::build_operator("guarded", {X}, {guarded}));
  te::Tensor unbound = compute({L, 4}, [&](const std::vector<Var>& i) { return X(0, i[1]); }, "U");
  EXPECT_USER_ERROR(te::build_operator("unbound", {X}, {unbound}), "size 'L' used by 'U' is not a dimension");
  EXPECT_USER_ERROR(te::build_operator("none", {X}, {}), "operator 'none' has no outputs");
  te::Tensor W = placeholder({4}, "W");
  te::Tensor uses_w = compute({M, 4}, [&](const std::vector<Var>& i) { return X(i[0], i[1]) * W(i[1]); }, "Z");
  EXPECT_USER_ERROR(te::build_operator("missing", {X}, {uses_w}), "tensor 'W' is read but is not among the inputs");
  EXPECT_USER_ERROR(te::build_operator("placeholder_out", {X}, {X}), "output 'X' is a placeholder");
}

}  // namespace
}  // namespace loom
