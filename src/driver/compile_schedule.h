// What compile(), tune() and the dynamic-shape runtime share: choosing a
// schedule for a task without measuring, and compiling one given schedule
// into a Kernel (the step the tests that check arbitrary states end in too).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loom/compile.h"
#include "schedule/schedule.h"
#include "schedule/tuner.h"

namespace loom {

Kernel compile_schedule(const Operator& op, const Schedule& schedule, const HwSpec& target, int threads);

// A GPU kernel's device-only time per call on a CUDA device (ms, mean of
// `repeats`): for benchmarks against vendor libraries. UserError without one.
double device_kernel_ms(const Kernel& kernel, const std::vector<Buffer>& inputs, const std::vector<Buffer>& outputs,
                        int repeats);

// The report of a kernel being assembled by the driver.
CompileReport& mutable_report(Kernel& kernel);

// UserError naming the first option outside its range or an unknown strategy.
void check_compile_options(const CompileOptions& options);
// The options that decide which schedule is chosen, as text (cache keys),
// a records file's contents included.
std::string options_text(const CompileOptions& options);

// The replayed best record of the task in `records`; nothing when there is
// none that replays. `note` says which, either way.
std::optional<Candidate> record_candidate(const Task& task, const std::string& records, std::string& note);
// The first `count` candidates of options.strategy, best first.
std::vector<Candidate> strategy_candidates(const Task& task, const CompileOptions& options, int count);

// Notes accumulate: "; " between them.
void add_note(std::string& note, const std::string& text);

}  // namespace loom
