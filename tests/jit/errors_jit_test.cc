// Bad input through the compile/run API: each gets a UserError naming it.
#include "test_util.h"

namespace loom {
namespace {

Operator small_matmul() { return make_operator("matmul", {{"M", "4"}, {"N", "5"}, {"K", "6"}}); }

TEST(RunErrors, WrongBufferShapesAndCounts) {
  Operator op = small_matmul();
  Kernel k = compile(op);
  Buffer A = Buffer::allocate({4, 6}), B = Buffer::allocate({6, 5}), C = Buffer::allocate({4, 5});
  EXPECT_USER_ERROR(k.run({A}, {C}), "takes 2 inputs, got 1");
  EXPECT_USER_ERROR(k.run({A, B}, {}), "has 1 outputs, got 0");
  EXPECT_USER_ERROR(k.run({Buffer::allocate({4, 7}), B}, {C}),
                    "input #0 ('A') has shape [4, 7] but the operator expects [4, 6]");
  EXPECT_USER_ERROR(k.run({A, Buffer::allocate({6})}, {C}), "input #1 ('B') has 1 dimensions");
  EXPECT_USER_ERROR(k.run({A, B}, {Buffer::allocate({5, 4})}),
                    "output #0 ('C') has shape [5, 4] but the operator expects [4, 5]");
  EXPECT_USER_ERROR(k.run({A, B}, {Buffer::allocate({4, 5}, DType::i32())}), "has dtype i32");
}

TEST(RunErrors, NonContiguousAndAliasedBuffers) {
  Operator op = small_matmul();
  Kernel k = compile(op);
  Buffer A = Buffer::allocate({4, 6}), B = Buffer::allocate({6, 5}), C = Buffer::allocate({4, 5});
  std::vector<float> storage(12 * 6);
  Buffer strided = Buffer::borrow(storage.data(), {4, 6}, DType::f32(), {12, 1});
  EXPECT_USER_ERROR(k.run({strided, B}, {C}), "is not contiguous");
  Buffer alias = Buffer::borrow(A.data(), {4, 5});
  EXPECT_USER_ERROR(k.run({A, B}, {alias}), "overlaps input #0");
}

TEST(RunErrors, SymbolicSizesMustAgree) {
  Var M("M"), N("N"), K("K");
  Operator op = ops::matmul(M, N, K);
  Kernel k = compile(op);
  // K is 6 from A but B says 7.
  EXPECT_USER_ERROR(k.run({Buffer::allocate({4, 6}), Buffer::allocate({7, 5})}, {Buffer::allocate({4, 5})}),
                    "input #1 ('B') has shape [7, 5] but the operator expects [6, 5]");
}

TEST(CompileErrors, UnknownStrategyAndThreads) {
  CompileOptions options;
  options.strategy = "genius";
  EXPECT_USER_ERROR(compile(small_matmul(), options), "unknown strategy 'genius'");
  options.strategy = "default";
  options.threads = -1;
  EXPECT_USER_ERROR(compile(small_matmul(), options), "threads=-1");
}

TEST(RunErrors, UncompiledKernel) {
  Kernel k;
  EXPECT_USER_ERROR(k.run({}, {}), "never compiled");
  EXPECT_USER_ERROR(k.report(), "never compiled");
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST(HandBuiltOperators, AnUnlistedSizeOrNoOutputIsAUserError) {
  Var M("M"), L("L");
  te::Tensor X = te::placeholder({M, 4}, "X");
  te::Tensor Y = te::compute({M, 4}, [&](const std::vector<Var>& i) { return X(i[0], i[1]) * 2.0f; }, "Y");
  Operator op;
  op.name = "by_hand";
  op.inputs = {X};
  op.outputs = {Y};
  op.flops = Expr(0);
  EXPECT_USER_ERROR(compile(op), "size 'M' in the shape of tensor 'X' is not among its size_vars");
  op.outputs.clear();
  op.size_vars = {M};
  EXPECT_USER_ERROR(compile(op), "operator 'by_hand' has no outputs");
}

}  // namespace
}  // namespace loom
