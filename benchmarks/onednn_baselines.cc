#include <omp.h>
#include "onednn_baselines.h"

#include "loom/buffer.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <unordered_map>
#include <vector>

namespace bench {

namespace {

// Float storage from loom's own Buffer::allocate (buffers of 2 MiB and more
// on transparent huge pages), so both sides of a comparison get the same
// kind of memory.
class FloatVec {
 public:
  explicit FloatVec(size_t n = 0) : buffer_(loom::Buffer::allocate({int64_t(n)})) {}
  float* data() const { return buffer_.as<float>(); }
  size_t size() const { return size_t(buffer_.numel()); }
  void resize(size_t n) { *this = FloatVec(n); }  // zero-filled afresh: callers fill it

 private:
  loom::Buffer buffer_;
};

FloatVec random_vector(size_t n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1, 1);
  FloatVec v(n);
  for (size_t i = 0; i < n; ++i) v.data()[i] = d(rng);
  return v;
}

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// Copies `plain` (row-major, `plain_md`) into `to`, in the layout oneDNN chose for it: once, outside timing.
void reorder_into(const dnnl::memory::desc& plain_md, float* plain, dnnl::memory& to, dnnl::stream& strm) {
  dnnl::memory from(plain_md, engine(), plain);
  dnnl::reorder(from, to).execute(strm, from, to);
  strm.wait();
}

}  // namespace

void set_library_threads(int threads) {
  setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
  omp_set_num_threads(threads);  // the variable alone is too late once OpenMP has started
  openblas_set_num_threads(threads);
}

void limit_onednn_isa(const loom::HwSpec& spec) {
  const auto& isa = spec.cpu.isa;
  if (std::find(isa.begin(), isa.end(), "avx512f") == isa.end()) dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
}

struct GemmBuffers {
  FloatVec a, b, c;
};

std::shared_ptr<GemmBuffers> gemm_buffers(int64_t M, int64_t N, int64_t K) {
  return std::make_shared<GemmBuffers>(GemmBuffers{random_vector(M * K), random_vector(K * N), FloatVec(M * N)});
}

Baseline onednn_gemm(int64_t M, int64_t N, int64_t K, bool transpose_b) {
  auto s = gemm_buffers(M, N, K);
  return {"oneDNN",
          [s, M, N, K, transpose_b] {
            dnnl_sgemm('N', transpose_b ? 'T' : 'N', M, N, K, 1.f, s->a.data(), K, s->b.data(), transpose_b ? K : N,
                       0.f, s->c.data(), N);
          },
          s};
}

Baseline openblas_gemm(int64_t M, int64_t N, int64_t K, bool transpose_b) {
  auto s = gemm_buffers(M, N, K);
  return {"OpenBLAS",
          [s, M, N, K, transpose_b] {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, M, N, K, 1.f,
                        s->a.data(), K, s->b.data(), transpose_b ? K : N, 0.f, s->c.data(), N);
          },
          s};
}

Baseline onednn_dense(int64_t M, int64_t N, int64_t K, loom::ops::Epilogue epilogue) {
  using namespace dnnl;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  using loom::ops::Epilogue;
  const bool bias = epilogue != Epilogue::None;
  memory::desc src_md({M, K}, dt::f32, tag::ab), dst_md({M, N}, dt::f32, tag::ab);
  memory::desc wei_any({N, K}, dt::f32, tag::any), bias_md({N}, dt::f32, tag::a);
  inner_product_forward::desc desc =
      bias ? inner_product_forward::desc(prop_kind::forward_inference, src_md, wei_any, bias_md, dst_md)
           : inner_product_forward::desc(prop_kind::forward_inference, src_md, wei_any, dst_md);
  primitive_attr attr;
  if (epilogue == Epilogue::BiasRelu || epilogue == Epilogue::BiasGelu) {
    post_ops ops;
    ops.append_eltwise(1.f, epilogue == Epilogue::BiasRelu ? algorithm::eltwise_relu : algorithm::eltwise_gelu_erf,
                       0.f, 0.f);
    attr.set_post_ops(ops);
  }
  inner_product_forward::primitive_desc pd(desc, attr, engine());
  struct S {
    FloatVec src, wei_plain, wei, bias, dst;
    memory src_m, wei_m, bias_m, dst_m;
    std::unordered_map<int, memory> args;
    inner_product_forward prim;
    stream strm;
  };
  auto s = std::make_shared<S>();
  s->src = random_vector(size_t(M * K));
  s->wei_plain = random_vector(size_t(N * K));
  s->wei.resize(pd.weights_desc().get_size() / sizeof(float) + 16);
  s->bias = random_vector(size_t(N));
  s->dst.resize(size_t(M * N));
  s->src_m = memory(src_md, engine(), s->src.data());
  s->wei_m = memory(pd.weights_desc(), engine(), s->wei.data());
  s->bias_m = memory(bias_md, engine(), s->bias.data());
  s->dst_m = memory(dst_md, engine(), s->dst.data());
  s->strm = stream(engine());
  reorder_into(memory::desc({N, K}, dt::f32, tag::ab), s->wei_plain.data(), s->wei_m, s->strm);
  s->args = {{DNNL_ARG_SRC, s->src_m}, {DNNL_ARG_WEIGHTS, s->wei_m}, {DNNL_ARG_DST, s->dst_m}};
  if (bias) s->args[DNNL_ARG_BIAS] = s->bias_m;
  s->prim = inner_product_forward(pd);
  return {"oneDNN",
          [s] {
            s->prim.execute(s->strm, s->args);
            s->strm.wait();
          },
          s,
          pd.impl_info_str()};
}

Baseline onednn_conv(const loom::ops::Conv2dParams& p, bool bn_relu, bool preferred_layout) {
  using namespace dnnl;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  const int64_t OH = (p.H + 2 * p.pad - p.dilation * (p.KH - 1) - 1) / p.stride + 1;
  const int64_t OW = (p.W + 2 * p.pad - p.dilation * (p.KW - 1) - 1) / p.stride + 1;
  const bool grouped = p.groups > 1;
  memory::dims src_dims{p.N, p.CI, p.H, p.W}, dst_dims{p.N, p.CO, OH, OW};
  memory::dims wei_dims = grouped ? memory::dims{p.groups, p.CO / p.groups, p.CI / p.groups, p.KH, p.KW}
                                  : memory::dims{p.CO, p.CI, p.KH, p.KW};
  const tag act = preferred_layout ? tag::any : tag::nhwc;
  memory::desc src_md(src_dims, dt::f32, act), dst_md(dst_dims, dt::f32, act);
  memory::desc wei_any(wei_dims, dt::f32, tag::any);
  convolution_forward::desc desc(prop_kind::forward_inference, algorithm::convolution_direct, src_md, wei_any,
                                 dst_md, {p.stride, p.stride}, {p.dilation - 1, p.dilation - 1}, {p.pad, p.pad},
                                 {p.pad, p.pad});
  primitive_attr attr;
  if (bn_relu) {  // scale/shift folded as the library does: an eltwise linear, then relu
    post_ops ops;
    ops.append_eltwise(1.f, algorithm::eltwise_linear, 1.1f, 0.1f);
    ops.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(ops);
  }
  convolution_forward::primitive_desc pd(desc, attr, engine());
  struct S {
    FloatVec src, wei_plain, wei, dst;
    memory src_m, wei_m, dst_m;
    convolution_forward prim;
    stream strm;
  };
  auto s = std::make_shared<S>();
  s->src = random_vector(pd.src_desc().get_size() / sizeof(float));
  s->wei_plain = random_vector(p.CO * (p.CI / p.groups) * p.KH * p.KW);
  s->wei.resize(pd.weights_desc().get_size() / sizeof(float) + 16);
  s->dst.resize(pd.dst_desc().get_size() / sizeof(float));
  s->src_m = memory(pd.src_desc(), engine(), s->src.data());
  s->dst_m = memory(pd.dst_desc(), engine(), s->dst.data());
  s->wei_m = memory(pd.weights_desc(), engine(), s->wei.data());
  s->strm = stream(engine());
  reorder_into(memory::desc(wei_dims, dt::f32, grouped ? tag::goihw : tag::oihw), s->wei_plain.data(), s->wei_m,
               s->strm);
  s->prim = convolution_forward(pd);
  return {"oneDNN",
          [s] {
            s->prim.execute(s->strm, {{DNNL_ARG_SRC, s->src_m}, {DNNL_ARG_WEIGHTS, s->wei_m}, {DNNL_ARG_DST, s->dst_m}});
            s->strm.wait();
          },
          s,
          pd.impl_info_str()};
}

Baseline onednn_l2_norm(int64_t M, int64_t N) {
  using namespace dnnl;
  using tag = memory::format_tag;
  memory::desc src_md({M, N}, memory::data_type::f32, tag::ab), dst_md({M, 1}, memory::data_type::f32, tag::ab);
  reduction::desc desc(algorithm::reduction_norm_lp_sum, src_md, dst_md, 2.f, 0.f);
  reduction::primitive_desc pd(desc, engine());
  struct S {
    FloatVec src, dst;
    memory src_m, dst_m;
    reduction prim;
    stream strm;
  };
  auto s = std::make_shared<S>();
  s->src = random_vector(M * N);
  s->dst.resize(M);
  s->src_m = memory(src_md, engine(), s->src.data());
  s->dst_m = memory(dst_md, engine(), s->dst.data());
  s->strm = stream(engine());
  s->prim = reduction(pd);
  return {"oneDNN",
          [s] {
            s->prim.execute(s->strm, {{DNNL_ARG_SRC, s->src_m}, {DNNL_ARG_DST, s->dst_m}});
            s->strm.wait();
          },
          s,
          pd.impl_info_str()};
}

Baseline openblas_l2_norm(int64_t M, int64_t N) {
  struct S {
    FloatVec src, dst;
  };
  auto s = std::make_shared<S>(S{random_vector(M * N), FloatVec(M)});
  return {"OpenBLAS",
          [s, M, N] {
            for (int64_t i = 0; i < M; ++i) s->dst.data()[i] = cblas_snrm2(N, s->src.data() + i * N, 1);
          },
          s};
}

Baseline onednn_softmax(int64_t M, int64_t N) {
  using namespace dnnl;
  memory::desc md({M, N}, memory::data_type::f32, memory::format_tag::ab);
  softmax_forward::primitive_desc pd(softmax_forward::desc(prop_kind::forward_inference, md, 1), engine());
  struct S {
    FloatVec src, dst;
    memory src_m, dst_m;
    softmax_forward prim;
    stream strm;
  };
  auto s = std::make_shared<S>();
  s->src = random_vector(M * N);
  s->dst.resize(size_t(M * N));
  s->src_m = memory(md, engine(), s->src.data());
  s->dst_m = memory(md, engine(), s->dst.data());
  s->strm = stream(engine());
  s->prim = softmax_forward(pd);
  return {"oneDNN",
          [s] {
            s->prim.execute(s->strm, {{DNNL_ARG_SRC, s->src_m}, {DNNL_ARG_DST, s->dst_m}});
            s->strm.wait();
          },
          s,
          pd.impl_info_str()};
}

Baseline onednn_layernorm(int64_t M, int64_t N) {
  using namespace dnnl;
  memory::desc md({M, N}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc vec_md({N}, memory::data_type::f32, memory::format_tag::a);
  layer_normalization_forward::desc desc(prop_kind::forward_inference, md, 1e-5f,
                                         normalization_flags::use_scale | normalization_flags::use_shift);
  layer_normalization_forward::primitive_desc pd(desc, engine());
  struct S {
    FloatVec src, dst, scale, shift;
    memory src_m, dst_m, scale_m, shift_m;
    layer_normalization_forward prim;
    stream strm;
  };
  auto s = std::make_shared<S>();
  s->src = random_vector(M * N);
  s->dst.resize(size_t(M * N));
  s->scale = random_vector(N);
  s->shift = random_vector(N);
  s->src_m = memory(md, engine(), s->src.data());
  s->dst_m = memory(md, engine(), s->dst.data());
  s->scale_m = memory(vec_md, engine(), s->scale.data());
  s->shift_m = memory(vec_md, engine(), s->shift.data());
  s->strm = stream(engine());
  s->prim = layer_normalization_forward(pd);
  return {"oneDNN",
          [s] {
            s->prim.execute(s->strm, {{DNNL_ARG_SRC, s->src_m},
                                      {DNNL_ARG_DST, s->dst_m},
                                      {DNNL_ARG_SCALE, s->scale_m},
                                      {DNNL_ARG_SHIFT, s->shift_m}});
            s->strm.wait();
          },
          s,
          pd.impl_info_str()};
}

}  // namespace bench
