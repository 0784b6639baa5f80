// What CPU and GPU lowering share: one flat buffer per tensor, and the reads
// of an expression lowered: reads of inlined producers replaced by their
// bodies, reads of a row-local stage by loads of its row buffer (CPU row
// fusion), every other read by a flat Load of the tensor's buffer.
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

#include "ir/expr_nodes.h"
#include "lower/loop_ir.h"
#include "schedule/schedule.h"

namespace loom {

class StageReads {
 public:
  // The tensor's buffer, created on first use.
  BufferRef buffer_for(const te::Tensor& t);
  bool has_buffer(const TensorNode* t) const { return buffers_.count(t) != 0; }
  // Reads of `t` become `body` (already lowered) at the read's indices.
  void inline_stage(const TensorNode* t, Expr body) { inlined_[t] = std::move(body); }
  // Reads of `t` become loads of `row`, a buffer of shape {slots, slot
  // elements}, indexed by their dimensions after the first `row_axes`, in
  // slot (row number mod `slots`).
  void read_row_locally(const TensorNode* t, BufferRef row, int row_axes, int slots);
  Expr rewrite(const Expr& e);
  // Rows of `t`'s buffer (its last dimension) `pitch` elements apart rather
  // than back to back (scratch_row_pitch in schedule.h); before its buffer
  // is made. The padding's elements are neither written nor read.
  void set_row_pitch(const TensorNode* t, int64_t pitch) { row_pitch_[t] = pitch; }
  // `t`'s shape in memory: its last dimension widened to its row pitch.
  std::vector<Expr> layout_shape(const TensorNode* t) const;

  // The value of the element-wise `consumer` at `coords`, given the value of
  // the `anchor` it reads at the same point (a fused write-back), lowered.
  using Epilogue = std::function<Expr(const Expr& value, const std::vector<Expr>& coords)>;
  Epilogue epilogue(const te::Tensor& consumer, const te::Tensor& anchor);

 private:
  struct RowLocal {
    BufferRef buffer;
    int row_axes;
    int slots;
  };
  std::unordered_map<const TensorNode*, BufferRef> buffers_;
  std::unordered_map<const TensorNode*, Expr> inlined_;
  std::unordered_map<const TensorNode*, RowLocal> row_local_;
  std::unordered_map<const TensorNode*, int64_t> row_pitch_;
};

// Where a row's part of a row-local buffer of `slots` slots starts: slot
// (`row`, flattened over `row_shape`) mod `slots`, times `slot_elems`.
Expr row_slot_base(const std::vector<Expr>& row, const std::vector<Expr>& row_shape, int slots, const Expr& slot_elems);

// The elements of one slot of a row-local buffer holding rows of
// `row_elems`: whole cache lines of `line_bytes`, so that no vector access
// to one row, a masked remainder's full-width load included, reaches into
// another's slot. (Softmax 8256x43 kept its rows' exponentials 172 bytes
// apart, so a row's last, masked vector was loaded and stored whole over
// the next row's first elements: it ran 0.22 ms in some processes, in every
// one with address randomization off, and 0.115 ms in the others; with
// slots of whole lines, 0.115-0.12 ms in every process.)
Expr row_slot_elems(const Expr& row_elems, DType type, int line_bytes);

// The stage the schedule fuses into the anchor's write-back, or null.
const StageSchedule* fused_consumer(const Schedule& schedule);

// The function's signature: its name, size variables and buffers (inputs, then outputs); no body.
LoweredFunc function_signature(const Operator& op, StageReads& reads);

// The stage walk both lowerings share: each stage in producer order, those
// fused into the anchor's write-back skipped, inlined ones recorded in
// `reads`; the anchor under a state built by `tiled` (with the fused
// consumer, or null), every other materialized stage by `materialized` (with
// its body's reads lowered). Their code in order, wrapped in heap Allocates
// of the intermediate results.
struct StageBuilders {
  std::function<Stmt(const StageSchedule& stage, const StageSchedule* consumer)> tiled;
  std::function<Stmt(const StageSchedule& stage, const Expr& body)> materialized;
};
Stmt lower_stage_by_stage(const Schedule& schedule, StageReads& reads, const StageBuilders& build);

}  // namespace loom
