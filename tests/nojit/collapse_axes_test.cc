// Collapsing an operator's axes: which axes merge, which do not, and that the
// collapsed operator computes the same values over the same buffers (the
// reference executor run on both, fed the same memory).
#include "schedule/anchor.h"
#include "schedule/collapse_axes.h"
#include "schedule/task.h"
#include "test_util.h"

namespace loom {
namespace {

Operator conv(std::map<std::string, std::string> params) {
  params.emplace("KH", "1");
  params.emplace("KW", "1");
  return make_operator("conv2d", params);
}

std::vector<int64_t> extents(const AnchorInfo& anchor) {
  std::vector<int64_t> out(anchor.const_extent.begin(), anchor.const_extent.end());
  return out;
}

// The collapsed operator's outputs, computed by the reference executor on
// views of the original inputs' memory, equal the original's bit for bit.
void expect_same_values(const Operator& op) {
  const Operator collapsed = collapse_axes(op);
  const std::vector<Buffer> inputs = random_inputs(op, 3);
  std::vector<Buffer> views;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int64_t> shape;
    for (const Expr& e : collapsed.inputs[i].shape()) shape.push_back(*e.as_const_int());
    views.push_back(Buffer::borrow(inputs[i].data(), shape));
    ASSERT_EQ(views.back().numel(), inputs[i].numel()) << collapsed.inputs[i].name();
  }
  const std::vector<Buffer> want = evaluate_reference(op, inputs), got = evaluate_reference(collapsed, views);
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(want[o].numel(), got[o].numel());
    for (int64_t i = 0; i < got[o].numel(); ++i)
      ASSERT_EQ(want[o].as<float>()[i], got[o].as<float>()[i]) << o << " " << i;
  }
}

TEST(CollapseAxes, APointwiseConvolutionIsAGemmOverItsPixels) {
  const Operator op = conv({{"N", "2"}, {"H", "5"}, {"W", "7"}, {"CI", "13"}, {"CO", "19"}});
  const AnchorInfo anchor = analyze_anchor(collapse_axes(op));
  // [n oh ow, co] x [ci]: the window's unit axes dropped, the pixels one run.
  EXPECT_EQ(anchor.num_spatial, 2);
  EXPECT_EQ(extents(anchor), (std::vector<int64_t>{70, 19, 13}));
  expect_same_values(op);
}

TEST(CollapseAxes, NchwMergesThePixelsBehindTheChannels) {
  const Operator op = conv({{"N", "2"}, {"H", "3"}, {"W", "11"}, {"CI", "7"}, {"CO", "9"}, {"layout", "NCHW"}});
  const AnchorInfo anchor = analyze_anchor(collapse_axes(op));
  // The weights read co but not the batch: n and co stay apart.
  EXPECT_EQ(extents(anchor), (std::vector<int64_t>{2, 9, 33, 7}));
  expect_same_values(op);
}

TEST(CollapseAxes, TheEpilogueStageCollapsesWithTheConvolutionAndStaysFusable) {
  const Operator op = conv({{"N", "1"}, {"H", "6"}, {"W", "5"}, {"CI", "8"}, {"CO", "12"}, {"epilogue", "bn_relu"}});
  const AnchorInfo anchor = analyze_anchor(collapse_axes(op));
  EXPECT_EQ(extents(anchor), (std::vector<int64_t>{30, 12, 8}));
  EXPECT_TRUE(anchor.consumer.defined());
  expect_same_values(op);
}

TEST(CollapseAxes, StridesWindowsAndPaddingKeepThePixelsApart) {
  // Stride 2: output row oh starts 2 input rows on, not OW pixels on. The
  // batch merges with the rows where the image has exactly 2 OH rows.
  const Operator even = conv({{"N", "2"}, {"H", "10"}, {"W", "9"}, {"CI", "4"}, {"CO", "8"}, {"stride", "2"}});
  EXPECT_EQ(extents(analyze_anchor(collapse_axes(even))), (std::vector<int64_t>{10, 5, 8, 4}));
  expect_same_values(even);
  const Operator odd = conv({{"N", "2"}, {"H", "9"}, {"W", "9"}, {"CI", "4"}, {"CO", "8"}, {"stride", "2"}});
  EXPECT_EQ(extents(analyze_anchor(collapse_axes(odd))), (std::vector<int64_t>{2, 5, 5, 8, 4}));
  // A 3x3 window without padding: oh + kh runs past OW pixels per row.
  const Operator window = make_operator(
      "conv2d", {{"N", "2"}, {"H", "6"}, {"W", "6"}, {"CI", "3"}, {"CO", "4"}, {"KH", "3"}, {"KW", "3"}});
  EXPECT_EQ(analyze_anchor(collapse_axes(window)).num_spatial, 4);
  // Padding: the padded input is a stage of another shape; nothing merges.
  const Operator padded = make_operator(
      "conv2d", {{"N", "1"}, {"H", "6"}, {"W", "6"}, {"CI", "3"}, {"CO", "4"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}});
  EXPECT_EQ(collapse_axes(padded).outputs[0].get(), padded.outputs[0].get());
}

TEST(CollapseAxes, GemmsKeepTheirAxesElementWiseOperatorsLoseThem) {
  // A reads m but not n, B the other way round: no pair is one run in both.
  const Operator op = make_operator("matmul", {{"M", "8"}, {"N", "9"}, {"K", "10"}});
  EXPECT_EQ(collapse_axes(op).outputs[0].get(), op.outputs[0].get());
  // An element-wise operator is one run; with a symbolic size, nothing merges.
  const Operator gelu = make_operator("gelu", {{"M", "5"}, {"N", "37"}});
  EXPECT_EQ(extents(analyze_anchor(collapse_axes(gelu))), (std::vector<int64_t>{185}));
  expect_same_values(gelu);
  const Operator dynamic = make_operator("gelu", {{"N", "37"}}, {"M"});
  EXPECT_EQ(collapse_axes(dynamic).outputs[0].get(), dynamic.outputs[0].get());
}

TEST(CollapseAxes, TheTaskSchedulesTheCollapsedOperatorAndKeepsTheDeclaredOne) {
  const Operator op = conv({{"N", "1"}, {"H", "7"}, {"W", "7"}, {"CI", "16"}, {"CO", "32"}});
  const Task task = make_task(op, detect_host_cpu(), 1);
  EXPECT_EQ(task.op.inputs[0].get(), op.inputs[0].get());
  EXPECT_EQ(task.anchor->stage.get(), task.scheduled->outputs[0].get());
  EXPECT_EQ(extents(*task.anchor), (std::vector<int64_t>{49, 32, 16}));
}

}  // namespace
}  // namespace loom
