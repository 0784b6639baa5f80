// Operators by name: the parameter specs the CLI lists, validation of string
// parameters, and dispatch to the typed builders.
#include <algorithm>
#include <charconv>
#include <functional>

#include "loom/error.h"
#include "loom/ops.h"

namespace loom {

namespace {

using Params = std::map<std::string, std::string>;

ParamSpec size(const std::string& name, const std::string& doc, const std::string& def = "") {
  return ParamSpec{name, ParamKind::Int, def, {}, doc};
}
ParamSpec choice(const std::string& name, std::vector<std::string> choices, const std::string& doc) {
  std::string def = choices.front();
  return ParamSpec{name, ParamKind::Choice, def, std::move(choices), doc};
}

std::vector<ParamSpec> conv_params(bool with_co, bool with_dilation_groups) {
  std::vector<ParamSpec> ps = {size("N", "batch"), size("H", "input height"), size("W", "input width")};
  if (with_co) {
    ps.push_back(size("CI", "input channels"));
    ps.push_back(size("CO", "output channels"));
  } else {
    ps.push_back(size("C", "channels"));
  }
  ps.push_back(size("KH", "kernel height"));
  ps.push_back(size("KW", "kernel width"));
  ps.push_back(size("stride", "stride", "1"));
  ps.push_back(size("pad", "zero padding on each side", "0"));
  if (with_dilation_groups) {
    ps.push_back(size("dilation", "dilation", "1"));
    ps.push_back(size("groups", "groups (divides CI and CO)", "1"));
  }
  return ps;
}

struct Entry {
  OperatorInfo info;
  std::function<Operator(const Params&)> build;
};

// A size parameter given as symbolic (make_operator's `symbolic` list).
constexpr const char* kSymbolic = "?";

int64_t get_int(const Params& p, const std::string& key) {
  const std::string& s = p.at(key);
  LOOM_USER_CHECK(s != kSymbolic, "parameter ", key, " of this operator cannot be symbolic (it must be known when "
                  "the operator is built)");
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  LOOM_USER_CHECK(ec == std::errc() && end == s.data() + s.size(), "parameter ", key, "='", s,
                  "' is not an integer");
  return v;
}

// A size that builders taking Exprs accept symbolic: a Var named like the parameter.
Expr get_size(const Params& p, const std::string& key) {
  return p.at(key) == kSymbolic ? Expr(Var(key)) : Expr(get_int(p, key));
}

ops::Layout get_layout(const Params& p) { return p.at("layout") == "NCHW" ? ops::Layout::NCHW : ops::Layout::NHWC; }

ops::Conv2dParams conv_from(const Params& p, const std::string& channels_key) {
  ops::Conv2dParams c;
  c.N = get_int(p, "N");
  c.H = get_int(p, "H");
  c.W = get_int(p, "W");
  c.CI = get_int(p, channels_key);
  if (p.count("CO")) c.CO = get_int(p, "CO");
  c.KH = get_int(p, "KH");
  c.KW = get_int(p, "KW");
  c.stride = get_int(p, "stride");
  c.pad = get_int(p, "pad");
  if (p.count("dilation")) c.dilation = get_int(p, "dilation");
  if (p.count("groups")) c.groups = get_int(p, "groups");
  if (p.count("layout")) c.layout = get_layout(p);
  if (p.count("epilogue") && p.at("epilogue") == "bn_relu") c.epilogue = ops::Epilogue::BnRelu;
  return c;
}

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> e;
    auto M = size("M", "rows"), N = size("N", "columns"), K = size("K", "reduction length");
    e.push_back({{"matmul", "C[M,N] = A[M,K] B[K,N]", {M, N, K}}, [](const Params& p) {
                   return ops::matmul(get_size(p, "M"), get_size(p, "N"), get_size(p, "K"));
                 }});
    e.push_back({{"batch_matmul", "C[B,M,N] = A[B,M,K] B[B,K,N]", {size("B", "batch"), M, N, K}},
                 [](const Params& p) {
                   return ops::batch_matmul(get_size(p, "B"), get_size(p, "M"), get_size(p, "N"), get_size(p, "K"));
                 }});
    e.push_back({{"dense", "Y[M,N] = X[M,K] W[N,K]^T (+ bias, activation)",
                  {M, N, K, choice("epilogue", {"none", "bias", "bias_relu", "bias_gelu"}, "fused epilogue")}},
                 [](const Params& p) {
                   const std::string& ep = p.at("epilogue");
                   ops::Epilogue epi = ep == "bias" ? ops::Epilogue::Bias
                                       : ep == "bias_relu" ? ops::Epilogue::BiasRelu
                                       : ep == "bias_gelu" ? ops::Epilogue::BiasGelu
                                                           : ops::Epilogue::None;
                   return ops::dense(get_size(p, "M"), get_size(p, "N"), get_size(p, "K"), epi);
                 }});
    auto conv = conv_params(true, true);
    conv.push_back(choice("layout", {"NHWC", "NCHW"}, "activation layout"));
    conv.push_back(choice("epilogue", {"none", "bn_relu"}, "fused folded batch-norm (scale, shift) + relu"));
    e.push_back({{"conv2d", "2-D convolution (weights HWIO for NHWC, OIHW for NCHW)", conv},
                 [](const Params& p) { return ops::conv2d(conv_from(p, "CI")); }});
    auto dep = conv_params(false, false);
    dep.push_back(choice("layout", {"NHWC", "NCHW"}, "activation layout"));
    e.push_back({{"depthwise_conv2d", "depthwise 2-D convolution (weights [KH,KW,C] / [C,KH,KW])", dep},
                 [](const Params& p) { return ops::depthwise_conv2d(conv_from(p, "C")); }});
    e.push_back({{"conv2d_transpose", "transposed 2-D convolution, NHWC, weights [KH,KW,CI,CO]",
                  conv_params(true, false)},
                 [](const Params& p) { return ops::conv2d_transpose(conv_from(p, "CI")); }});
    auto pool = conv_params(false, false);
    pool.push_back(choice("kind", {"max", "avg"}, "pooling function"));
    e.push_back({{"pool2d", "2-D pooling, NHWC", pool}, [](const Params& p) {
                   return ops::pool2d(conv_from(p, "C"), p.at("kind") == "avg" ? ops::PoolKind::Avg : ops::PoolKind::Max);
                 }});
    auto MN = std::vector<ParamSpec>{M, N};
    e.push_back({{"softmax", "softmax over the last axis of X[M,N]", MN},
                 [](const Params& p) { return ops::softmax(get_size(p, "M"), get_size(p, "N")); }});
    e.push_back({{"layernorm", "layer normalisation over the last axis of X[M,N], eps 1e-5", MN},
                 [](const Params& p) { return ops::layernorm(get_size(p, "M"), get_size(p, "N")); }});
    e.push_back({{"reduce", "Y[M] = reduction over the last axis of X[M,N]",
                  {M, N, choice("kind", {"sum", "max", "l2"}, "reduction")}},
                 [](const Params& p) {
                   const std::string& k = p.at("kind");
                   auto kind = k == "max" ? ops::ReduceKind::Max : k == "l2" ? ops::ReduceKind::L2 : ops::ReduceKind::Sum;
                   return ops::reduce(get_size(p, "M"), get_size(p, "N"), kind);
                 }});
    e.push_back({{"gelu", "Y = GELU(X), X[M,N] (exact, erf form)", MN},
                 [](const Params& p) { return ops::gelu(get_size(p, "M"), get_size(p, "N")); }});
    e.push_back({{"bias_add_relu", "Y = relu(X[M,N] + bias[N])", MN},
                 [](const Params& p) { return ops::bias_add_relu(get_size(p, "M"), get_size(p, "N")); }});
    e.push_back({{"bias_add_gelu", "Y = GELU(X[M,N] + bias[N])", MN},
                 [](const Params& p) { return ops::bias_add_gelu(get_size(p, "M"), get_size(p, "N")); }});
    e.push_back({{"channel_affine_relu", "Y = relu(X[N,H,W,C] * scale[C] + shift[C]), NHWC",
                  {size("N", "batch"), size("H", "height"), size("W", "width"), size("C", "channels")}},
                 [](const Params& p) {
                   return ops::channel_affine_relu(get_size(p, "N"), get_size(p, "H"), get_size(p, "W"), get_size(p, "C"));
                 }});
    return e;
  }();
  return entries;
}

std::string known_names() {
  std::string s;
  for (const Entry& e : registry()) s += (s.empty() ? "" : ", ") + e.info.name;
  return s;
}

// Fills defaults and checks every parameter against its spec; the size
// parameters named in `symbolic` become kSymbolic.
Params validated(const OperatorInfo& info, const Params& given, const std::vector<std::string>& symbolic) {
  Params out;
  for (const std::string& name : symbolic) {
    bool is_size = false;
    for (const ParamSpec& s : info.params) is_size |= s.name == name && s.kind == ParamKind::Int;
    LOOM_USER_CHECK(is_size, "'", name, "' is not a size parameter of operator ", info.name);
    LOOM_USER_CHECK(!given.count(name), "parameter ", name, " is given a value and declared symbolic");
  }
  for (const auto& [key, value] : given) {
    bool known = false;
    for (const ParamSpec& s : info.params) known |= s.name == key;
    if (!known) {
      std::string names;
      for (const ParamSpec& s : info.params) names += (names.empty() ? "" : ", ") + s.name;
      throw UserError("unknown parameter '" + key + "' for operator " + info.name + " (parameters: " + names + ")");
    }
  }
  for (const ParamSpec& s : info.params) {
    if (std::find(symbolic.begin(), symbolic.end(), s.name) != symbolic.end()) {
      out[s.name] = kSymbolic;
      continue;
    }
    auto it = given.find(s.name);
    LOOM_USER_CHECK(it != given.end() || !s.default_value.empty(), "operator ", info.name,
                    ": missing parameter ", s.name, " (", s.doc, ")");
    std::string value = it != given.end() ? it->second : s.default_value;
    if (s.kind == ParamKind::Choice) {
      bool ok = false;
      std::string all;
      for (const std::string& c : s.choices) {
        ok |= c == value;
        all += (all.empty() ? "" : "|") + c;
      }
      LOOM_USER_CHECK(ok, "parameter ", s.name, "='", value, "' is not one of ", all);
    } else {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      LOOM_USER_CHECK(!value.empty() && ec == std::errc() && end == value.data() + value.size(), "parameter ",
                      s.name, "='", value, "' is not an integer");
      const int64_t minimum = s.name == "pad" ? 0 : 1;
      LOOM_USER_CHECK(v >= minimum, "parameter ", s.name, "=", v, " must be ",
                      minimum == 0 ? "non-negative" : "positive");
      LOOM_USER_CHECK(v <= (int64_t(1) << 31), "parameter ", s.name, "=", v, " is too large");
    }
    out[s.name] = value;
  }
  return out;
}

// Rejects operators whose tensors could not be allocated.
void check_tensor_sizes(const Operator& op) {
  constexpr int64_t kMaxElements = int64_t(1) << 32;  // 16 GiB of fp32
  auto check = [&](const te::Tensor& t) {
    int64_t n = 1;
    for (const Expr& d : t.shape()) {
      auto v = d.as_const_int();
      if (!v) return;  // symbolic: checked when bound at run time
      LOOM_USER_CHECK(!__builtin_mul_overflow(n, *v, &n) && n <= kMaxElements, op.name, ": tensor '",
                      t.name(), "' would have more than ", kMaxElements, " elements; sizes are too large");
    }
  };
  for (const auto& t : op.inputs) check(t);
  for (const auto& t : op.outputs) check(t);
}

}  // namespace

const std::vector<OperatorInfo>& list_operators() {
  static const std::vector<OperatorInfo> infos = [] {
    std::vector<OperatorInfo> v;
    for (const Entry& e : registry()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

Operator make_operator(const std::string& name, const Params& params) { return make_operator(name, params, {}); }

Operator make_operator(const std::string& name, const Params& params, const std::vector<std::string>& symbolic) {
  for (const Entry& e : registry()) {
    if (e.info.name != name) continue;
    Params p = validated(e.info, params, symbolic);
    Operator op = e.build(p);
    op.params = p;
    check_tensor_sizes(op);
    return op;
  }
  throw UserError("unknown operator '" + name + "' (known: " + known_names() + ")");
}

}  // namespace loom
