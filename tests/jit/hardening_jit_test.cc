// Regression tests for the defects of the hardening campaign (issue 10) that
// are reachable from the C++ API. The CLI ones are in cli/cli_tests.cmake
// (threads, walk steps, top-k, repeated flags, huge arguments, memory), the
// hwspec ones in nojit/hwspec_test.cc and compile time in
// compile_bound_jit_test.cc.
#include "runtime/runtime_abi.h"
#include "test_util.h"

namespace loom {
namespace {

// Defect 3: a byte count that wraps used to give a tiny buffer.
TEST(Hardening, BufferSizesThatOverflowAreUserErrors) {
  EXPECT_USER_ERROR(Buffer::allocate({int64_t(1) << 59, 8}), "shape [576460752303423488, 8] overflows 64 bits");
  EXPECT_USER_ERROR(Buffer::allocate({int64_t(1) << 31, int64_t(1) << 31, 4}), "overflows 64 bits");
  EXPECT_USER_ERROR(Buffer::allocate({-3, 4}), "dimension -3 is negative");
  float x[8];
  EXPECT_USER_ERROR(Buffer::borrow(x, {int64_t(1) << 62, 4}), "overflows 64 bits");
}

// Defect 4: out of memory in generated code's scratch used to abort with no
// message; now the allocation fails softly and the size is reported.
TEST(Hardening, ScratchAllocationFailureIsReportedNotAborted) {
  loom_take_alloc_failure();  // clear
  EXPECT_EQ(loom_alloc(int64_t(1) << 60), nullptr);
  EXPECT_EQ(loom_take_alloc_failure(), int64_t(1) << 60);
  EXPECT_EQ(loom_alloc(-8), nullptr);
  EXPECT_EQ(loom_take_alloc_failure(), -8);
  void* p = loom_alloc(4096);
  ASSERT_NE(p, nullptr);
  loom_free(p);
  EXPECT_EQ(loom_take_alloc_failure(), 0);
}

// Defect 5: a request far beyond the machine's memory is refused up front.
TEST(Hardening, RunsBeyondAvailableMemoryAreRefused) {
  Operator big = make_operator("matmul", {{"M", "65536"}, {"N", "65536"}, {"K", "65536"}});
  EXPECT_GT(run_memory_bytes(big), int64_t(48) << 30);
  EXPECT_USER_ERROR(check_run_memory(big), "GiB");
  Operator small = make_operator("matmul", {{"M", "64"}, {"N", "64"}, {"K", "64"}});
  EXPECT_NO_THROW(check_run_memory(small));
}

// Defect 7: a dense layer cannot take the convolution-only BnRelu epilogue.
TEST(Hardening, DenseRejectsBatchNormEpilogue) {
  EXPECT_USER_ERROR(ops::dense(4, 4, 4, ops::Epilogue::BnRelu), "epilogue BnRelu is for conv2d");
}

}  // namespace
}  // namespace loom
