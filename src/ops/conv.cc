// Convolutions and pooling over 4-D activations.
#include "ir/expr_nodes.h"
#include "loom/ops.h"
#include "ops/op_builder.h"

namespace loom::ops {

using te::compute;
using te::placeholder;
using te::reduce_axis;

namespace {

int64_t conv_out_extent(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
}

// Every parameter is at most 2^31, so that the window arithmetic below (a
// product of two parameters plus a few more) stays far inside 64 bits;
// products of more (flop counts) are Expr arithmetic, checked.
constexpr int64_t kMaxParam = int64_t(1) << 31;

void check_common(const Conv2dParams& p, const char* op) {
  for (auto [name, v] : {std::pair{"N", p.N}, {"H", p.H}, {"W", p.W}, {"CI", p.CI}, {"KH", p.KH},
                         {"KW", p.KW}, {"stride", p.stride}, {"dilation", p.dilation}})
    LOOM_USER_CHECK(v > 0, op, ": ", name, " must be positive, got ", v);
  LOOM_USER_CHECK(p.pad >= 0, op, ": pad must be non-negative, got ", p.pad);
  for (auto [name, v] : {std::pair{"N", p.N}, {"H", p.H}, {"W", p.W}, {"CI", p.CI}, {"CO", p.CO}, {"KH", p.KH},
                         {"KW", p.KW}, {"stride", p.stride}, {"dilation", p.dilation}, {"pad", p.pad},
                         {"groups", p.groups}})
    LOOM_USER_CHECK(v <= kMaxParam, op, ": ", name, "=", v, " is above the limit ", kMaxParam);
}

// Output extents, with a clear error when the window does not fit.
std::pair<int64_t, int64_t> checked_out_hw(const Conv2dParams& p, const char* op) {
  int64_t OH = conv_out_extent(p.H, p.KH, p.stride, p.pad, p.dilation);
  int64_t OW = conv_out_extent(p.W, p.KW, p.stride, p.pad, p.dilation);
  LOOM_USER_CHECK(p.H + 2 * p.pad >= p.dilation * (p.KH - 1) + 1 && OH > 0, op, ": empty output: H=", p.H,
                  " with pad=", p.pad, " is smaller than the dilated kernel KH=", p.KH, " (dilation ",
                  p.dilation, ")");
  LOOM_USER_CHECK(p.W + 2 * p.pad >= p.dilation * (p.KW - 1) + 1 && OW > 0, op, ": empty output: W=", p.W,
                  " with pad=", p.pad, " is smaller than the dilated kernel KW=", p.KW, " (dilation ",
                  p.dilation, ")");
  return {OH, OW};
}

}  // namespace

Operator conv2d(const Conv2dParams& p) {
  check_common(p, "conv2d");
  LOOM_USER_CHECK(p.CO > 0, "conv2d: CO must be positive, got ", p.CO);
  LOOM_USER_CHECK(p.groups > 0, "conv2d: groups must be positive, got ", p.groups);
  LOOM_USER_CHECK(p.CI % p.groups == 0, "conv2d: groups=", p.groups, " does not divide CI=", p.CI);
  LOOM_USER_CHECK(p.CO % p.groups == 0, "conv2d: groups=", p.groups, " does not divide CO=", p.CO);
  auto [OH, OW] = checked_out_hw(p, "conv2d");
  const int64_t cig = p.CI / p.groups, cog = p.CO / p.groups;
  auto rh = reduce_axis(p.KH, "rh"), rw = reduce_axis(p.KW, "rw"), rc = reduce_axis(cig, "rc");
  Expr flops = Expr(2) * p.N * OH * OW * p.CO * cig * p.KH * p.KW;

  LOOM_USER_CHECK(p.epilogue == Epilogue::None || p.epilogue == Epilogue::BnRelu,
                  "conv2d: epilogue must be none or bn_relu");
  const bool bn = p.epilogue == Epilogue::BnRelu;
  // The optional folded batch-norm + relu, a consumer of the convolution.
  auto finish = [&](te::Tensor X, te::Tensor Wt, te::Tensor conv, int channel_axis) {
    if (!bn) return finish_operator("conv2d", {X, Wt}, {conv}, flops);
    auto scale = placeholder({p.CO}, "scale");
    auto shift = placeholder({p.CO}, "shift");
    auto Y = compute(conv.shape(), [&](const std::vector<Var>& a) {
      std::vector<Expr> idx(a.begin(), a.end());
      return max(conv(idx) * scale(a[channel_axis]) + shift(a[channel_axis]), 0.0f);
    }, "Y");
    return finish_operator("conv2d", {X, Wt, scale, shift}, {Y}, flops + Expr(3) * p.N * OH * OW * p.CO);
  };
  if (p.layout == Layout::NHWC) {
    auto X = placeholder({p.N, p.H, p.W, p.CI}, "X");
    auto Wt = placeholder({p.KH, p.KW, cig, p.CO}, "W");
    auto Xp = pad_spatial(X, 1, p.pad, 0.0f);
    auto Y = compute({p.N, OH, OW, p.CO}, [&](const std::vector<Var>& a) {
      Expr ci = p.groups == 1 ? Expr(rc.var) : (a[3] / cog) * cig + rc.var;
      return te::sum(Xp(a[0], a[1] * p.stride + rh.var * p.dilation, a[2] * p.stride + rw.var * p.dilation, ci) *
                         Wt(rh.var, rw.var, rc.var, a[3]),
                     {rh, rw, rc});
    }, bn ? "conv" : "Y");
    return finish(X, Wt, Y, 3);
  }
  auto X = placeholder({p.N, p.CI, p.H, p.W}, "X");
  auto Wt = placeholder({p.CO, cig, p.KH, p.KW}, "W");
  auto Xp = pad_spatial(X, 2, p.pad, 0.0f);
  auto Y = compute({p.N, p.CO, OH, OW}, [&](const std::vector<Var>& a) {
    Expr ci = p.groups == 1 ? Expr(rc.var) : (a[1] / cog) * cig + rc.var;
    return te::sum(Xp(a[0], ci, a[2] * p.stride + rh.var * p.dilation, a[3] * p.stride + rw.var * p.dilation) *
                       Wt(a[1], rc.var, rh.var, rw.var),
                   {rc, rh, rw});
  }, bn ? "conv" : "Y");
  return finish(X, Wt, Y, 1);
}

Operator depthwise_conv2d(const Conv2dParams& p) {
  check_common(p, "depthwise_conv2d");
  auto [OH, OW] = checked_out_hw(p, "depthwise_conv2d");
  const int64_t C = p.CI;
  auto rh = reduce_axis(p.KH, "rh"), rw = reduce_axis(p.KW, "rw");
  Expr flops = Expr(2) * p.N * OH * OW * C * p.KH * p.KW;
  if (p.layout == Layout::NHWC) {
    auto X = placeholder({p.N, p.H, p.W, C}, "X");
    auto Wt = placeholder({p.KH, p.KW, C}, "W");
    auto Xp = pad_spatial(X, 1, p.pad, 0.0f);
    auto Y = compute({p.N, OH, OW, C}, [&](const std::vector<Var>& a) {
      return te::sum(Xp(a[0], a[1] * p.stride + rh.var * p.dilation, a[2] * p.stride + rw.var * p.dilation, a[3]) *
                         Wt(rh.var, rw.var, a[3]),
                     {rh, rw});
    }, "Y");
    return finish_operator("depthwise_conv2d", {X, Wt}, {Y}, flops);
  }
  auto X = placeholder({p.N, C, p.H, p.W}, "X");
  auto Wt = placeholder({C, p.KH, p.KW}, "W");
  auto Xp = pad_spatial(X, 2, p.pad, 0.0f);
  auto Y = compute({p.N, C, OH, OW}, [&](const std::vector<Var>& a) {
    return te::sum(Xp(a[0], a[1], a[2] * p.stride + rh.var * p.dilation, a[3] * p.stride + rw.var * p.dilation) *
                       Wt(a[1], rh.var, rw.var),
                   {rh, rw});
  }, "Y");
  return finish_operator("depthwise_conv2d", {X, Wt}, {Y}, flops);
}

Operator conv2d_transpose(const Conv2dParams& p) {
  check_common(p, "conv2d_transpose");
  LOOM_USER_CHECK(p.CO > 0, "conv2d_transpose: CO must be positive, got ", p.CO);
  LOOM_USER_CHECK(p.layout == Layout::NHWC && p.groups == 1 && p.dilation == 1,
                  "conv2d_transpose supports layout=NHWC, groups=1 and dilation=1 only");
  const int64_t OH = (p.H - 1) * p.stride - 2 * p.pad + p.KH;
  const int64_t OW = (p.W - 1) * p.stride - 2 * p.pad + p.KW;
  LOOM_USER_CHECK(OH > 0 && OW > 0, "conv2d_transpose: empty output (", OH, "x", OW, "): pad=", p.pad,
                  " is too large for H=", p.H, ", W=", p.W, ", KH=", p.KH, ", KW=", p.KW, ", stride=", p.stride);
  auto X = placeholder({p.N, p.H, p.W, p.CI}, "X");
  auto Wt = placeholder({p.KH, p.KW, p.CI, p.CO}, "W");
  auto rh = reduce_axis(p.KH, "rh"), rw = reduce_axis(p.KW, "rw"), rc = reduce_axis(p.CI, "rc");
  // Gather form: output (oh, ow) takes input (ih, iw) where ih*stride = oh + pad - rh.
  auto Y = compute({p.N, OH, OW, p.CO}, [&](const std::vector<Var>& a) {
    Expr th = a[1] + p.pad - rh.var, tw = a[2] + p.pad - rw.var;
    Expr ih = th / p.stride, iw = tw / p.stride;
    Expr valid = th >= 0 && tw >= 0 && th % p.stride == 0 && tw % p.stride == 0 && ih < p.H && iw < p.W;
    return te::sum(select(valid, X(a[0], ih, iw, rc.var), 0.0f) * Wt(rh.var, rw.var, rc.var, a[3]), {rh, rw, rc});
  }, "Y");
  return finish_operator("conv2d_transpose", {X, Wt}, {Y}, Expr(2) * p.N * p.H * p.W * p.CI * p.CO * p.KH * p.KW);
}

Operator pool2d(const Conv2dParams& p, PoolKind kind) {
  check_common(p, "pool2d");
  LOOM_USER_CHECK(2 * p.pad <= p.KH && 2 * p.pad <= p.KW, "pool2d: pad=", p.pad,
                  " must be at most half the window (KH=", p.KH, ", KW=", p.KW, ")");
  auto [OH, OW] = checked_out_hw(p, "pool2d");
  const int64_t C = p.CI;
  auto X = placeholder({p.N, p.H, p.W, C}, "X");
  auto rh = reduce_axis(p.KH, "rh"), rw = reduce_axis(p.KW, "rw");
  const bool is_max = kind == PoolKind::Max;
  auto Xp = pad_spatial(X, 1, p.pad, is_max ? lowest(DType::f32()) : Expr(0.0f));
  auto Y = compute({p.N, OH, OW, C}, [&](const std::vector<Var>& a) {
    Expr v = Xp(a[0], a[1] * p.stride + rh.var, a[2] * p.stride + rw.var, a[3]);
    if (is_max) return te::max(v, {rh, rw});
    return te::sum(v * float(1.0 / double(p.KH * p.KW)), {rh, rw});
  }, "Y");
  return finish_operator("pool2d", {X}, {Y}, Expr(p.N) * OH * OW * C * p.KH * p.KW);
}

}  // namespace loom::ops
