// Tuning records: one JSON object per line, one line per measurement.
//
//   {"workload": "dense K=768 M=128 N=3072 epilogue=bias float32", "op": "dense",
//    "params": {"K": "768", ...}, "hwspec": "host", "hwspec_fingerprint": "9c1e...",
//    "loom_version": "0.1", "steps_version": 2, "strategy": "hybrid", "threads": 1,
//    "steps": ["vectorize 1 16", "tile_grow 3 0", ...], "times_ms": [0.81, 0.80, ...],
//    "time_ms": 0.805, "error": "none", "error_msg": "", "timestamp": "2026-11-22T03:50:12Z"}
//
// A writer appends whole rounds with one write, then flushes and fsyncs, so
// a kill loses at most the round in flight; it starts on a fresh line when
// the file ends in a torn one. A reader skips a torn or corrupt line with a
// warning naming the file and line, and keeps every other line. The steps
// replay to the measured state (schedule/state.h), so a record is enough to
// rebuild the kernel; a record of steps whose meaning has since changed
// (steps_version, absent before 2) is skipped with a warning.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schedule/state.h"
#include "schedule/step.h"
#include "schedule/task.h"
#include "schedule/tuner.h"

namespace loom {

struct Record {
  std::string workload;
  std::string op;
  std::map<std::string, std::string> params;
  std::string hwspec;
  std::string hwspec_fingerprint;
  std::string loom_version;
  int steps_version = kStepsVersion;
  std::string strategy;
  int threads = 1;
  std::vector<std::string> steps;
  std::vector<double> times_ms;
  double time_ms = 0;
  std::string error = "none";
  std::string error_msg;
  std::string timestamp;
  bool ok() const { return error == "none"; }
};

// The record of measuring `candidate` on `task`.
Record make_record(const Task& task, const std::string& strategy, const Candidate& candidate,
                   const MeasureResult& result);

std::string to_json_line(const Record& r);
// Parses one line; an error message instead when it is not a valid record.
std::optional<Record> parse_record(const std::string& line, std::string& error);

class RecordWriter {
 public:
  explicit RecordWriter(const std::string& path);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  // Appends the lines, then fsyncs. UserError when the file cannot be written.
  void append(const std::vector<Record>& records);

 private:
  std::string path_;
  int fd_ = -1;
};

// Every valid record of `path` (none when it does not exist); each skipped
// line adds a warning "FILE:LINE: reason".
std::vector<Record> load_records(const std::string& path, std::vector<std::string>& warnings);

// The fastest correct record of this task's workload on this spec and
// thread count (any thread count when none matches), if any.
std::optional<Record> best_record(const std::vector<Record>& records, const Task& task);

// The measurement a record holds.
MeasureResult measure_result(const Record& r);

// The state a record's steps replay to on `task`; null (with `error` set)
// when they do not.
State replay_record(const Record& r, const Task& task, std::string& error);

}  // namespace loom
