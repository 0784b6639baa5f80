// Row fusion: multi-stage row operators (softmax, layernorm, a reduction
// whose per-row result is broadcast back over the row) run as one kernel,
// one parallel loop over rows, every stage of a row computed while the row is
// in L1 or registers. Stage by stage, each stage is a pass over the whole
// tensor with full-size temporaries in between.
//
// An operator is row-fusable over its leading R axes when every compute
// stage has at least R axes with the same leading extents, every read of a
// compute stage indexes those R axes with the reading stage's own axes (a
// row only reads its own row of another stage), and it is a row operator: a
// reduction produces a per-row value that a wider stage reads back.
#pragma once

#include "loom/hwspec.h"
#include "loom/operator.h"

namespace loom {

struct Schedule;

// R, the number of leading row axes, or 0 when `op` is not row-fusable.
int row_fusion_axes(const Operator& op);

// A row's stages fall into phases: a stage cannot start on a row before the
// reductions it reads (directly or through element-wise stages) have
// combined their lanes, a chain of dependent operations tens of cycles long.
// The phase of each of `stages` (producers first): 0 for a stage that reads
// no reduction, else one more than the latest phase of a reduction it reads.
// Lowering overlaps the phases of consecutive rows (Schedule::row_pipelined).
std::vector<int> row_phases(const std::vector<te::Tensor>& stages);
// The same for the stages of `schedule`, in its order.
std::vector<int> row_phases(const Schedule& schedule);

// Whether overlapping consecutive rows' phases pays for a row-fused `schedule`
// (its stages' reduce_width and accumulators set) on `cpu`.
bool row_pipelining_pays(const Schedule& schedule, const CpuSpec& cpu);

}  // namespace loom
