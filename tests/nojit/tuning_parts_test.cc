// Tuning pieces that need no code generation: records, faults, the scheduler's gradient.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "search/faults.h"
#include "search/records.h"
#include "task/task_scheduler.h"
#include "test_util.h"

namespace loom {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "_" + std::to_string(getpid());
}

Record sample_record(double ms) {
  Record r;
  r.workload = "matmul K=8 M=8 N=8 float32";
  r.op = "matmul";
  r.params = {{"K", "8"}, {"M", "8"}, {"N", "8"}};
  r.hwspec = "host";
  r.hwspec_fingerprint = "0123456789abcdef";
  r.loom_version = "0.1";
  r.strategy = "hybrid";
  r.threads = 2;
  r.steps = {"vectorize 1 8", "tile_grow 3 0"};
  r.times_ms = {ms, ms * 1.1};
  r.time_ms = ms;
  r.timestamp = "2026-11-22T00:00:00Z";
  return r;
}

TEST(Records, RoundTripThroughOneLine) {
  Record r = sample_record(0.5);
  r.error = "crash";
  r.error_msg = "worker killed by signal \"Segmentation fault\"\nsecond line";
  std::string line = to_json_line(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  std::string error;
  std::optional<Record> back = parse_record(line, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->workload, r.workload);
  EXPECT_EQ(back->params, r.params);
  EXPECT_EQ(back->steps, r.steps);
  EXPECT_EQ(back->times_ms, r.times_ms);
  EXPECT_EQ(back->error, "crash");
  EXPECT_EQ(back->error_msg, r.error_msg);
  EXPECT_EQ(back->threads, 2);
  EXPECT_FALSE(back->ok());
}

TEST(Records, TornAndCorruptLinesAreSkippedWithFileAndLine) {
  const std::string path = temp_path("torn.jsonl");
  {
    std::ofstream out(path);
    out << to_json_line(sample_record(1.0)) << "\n";
    std::string torn = to_json_line(sample_record(2.0));
    out << torn.substr(0, torn.size() / 2) << "\n";  // a kill mid-write, then more appends
    out << "not json at all\n";
    out << "{\"workload\": 3}\n";
    out << "\n";
    Record bad = sample_record(3.0);
    bad.threads = -4;
    out << to_json_line(bad) << "\n";
    out << to_json_line(sample_record(4.0)) << "\n";
  }
  std::vector<std::string> warnings;
  std::vector<Record> records = load_records(path, warnings);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].time_ms, 1.0);
  EXPECT_EQ(records[1].time_ms, 4.0);
  ASSERT_EQ(warnings.size(), 4u);
  EXPECT_NE(warnings[0].find(path + ":2:"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find(path + ":3:"), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[2].find(":4:"), std::string::npos) << warnings[2];
  EXPECT_NE(warnings[3].find("threads -4"), std::string::npos) << warnings[3];
  std::remove(path.c_str());
}

// Records keep steps, and a step's meaning can change between versions
// (register tiles stepped through divisors before steps_version 2): such a
// record would replay to another state than the one measured.
TEST(Records, RecordsOfOtherStepVersionsAreSkippedWithAWarning) {
  const std::string path = temp_path("versions.jsonl");
  {
    std::ofstream out(path);
    nlohmann::json older = nlohmann::json::parse(to_json_line(sample_record(1.0)));
    older.erase("steps_version");
    nlohmann::json newer = nlohmann::json::parse(to_json_line(sample_record(2.0)));
    newer["steps_version"] = kStepsVersion + 1;
    out << older.dump() << "\n" << newer.dump() << "\n" << to_json_line(sample_record(3.0)) << "\n";
  }
  std::vector<std::string> warnings;
  std::vector<Record> records = load_records(path, warnings);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].time_ms, 3.0);
  EXPECT_EQ(records[0].steps_version, kStepsVersion);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find(":1: skipped: steps_version 1"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("steps_version " + std::to_string(kStepsVersion + 1)), std::string::npos) << warnings[1];
  std::remove(path.c_str());
}

TEST(Records, AppendingAfterATornLastLineStartsAFreshLine) {
  const std::string path = temp_path("append.jsonl");
  {
    std::ofstream out(path);
    std::string line = to_json_line(sample_record(1.0));
    out << line << "\n" << line.substr(0, 40);  // torn, no newline
  }
  RecordWriter(path).append({sample_record(2.0), sample_record(3.0)});
  std::vector<std::string> warnings;
  std::vector<Record> records = load_records(path, warnings);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1].time_ms, 2.0);
  EXPECT_EQ(warnings.size(), 1u);  // only the torn line is lost
  std::remove(path.c_str());
}

TEST(Records, MissingFileIsEmptyAndADirectoryIsAnError) {
  std::vector<std::string> warnings;
  EXPECT_TRUE(load_records(temp_path("absent.jsonl"), warnings).empty());
  EXPECT_USER_ERROR(load_records(::testing::TempDir(), warnings), "is not a regular file");
  EXPECT_USER_ERROR(RecordWriter("/proc/loom-cannot-write-here"), "cannot open records file");
}

TEST(Faults, ParseAndDecideDeterministically) {
  FaultPlan p = parse_faults("crash=0.2,hang=0.1,wrong=0.1,seed=7");
  EXPECT_DOUBLE_EQ(p.crash, 0.2);
  EXPECT_EQ(p.seed, 7u);
  int counts[4] = {};
  for (uint64_t k = 0; k < 10000; ++k) {
    Fault f = p.decide(k * 7919);
    EXPECT_EQ(f, p.decide(k * 7919));
    ++counts[int(f)];
  }
  EXPECT_NEAR(counts[int(Fault::Crash)], 2000, 250);
  EXPECT_NEAR(counts[int(Fault::Hang)], 1000, 200);
  EXPECT_NEAR(counts[int(Fault::Wrong)], 1000, 200);
  EXPECT_FALSE(parse_faults("").any());
  EXPECT_USER_ERROR(parse_faults("crash"), "'crash' is not <kind>=<value>");
  EXPECT_USER_ERROR(parse_faults("crash=lots"), "'lots' is not a number");
  EXPECT_USER_ERROR(parse_faults("crash=1.5"), "must be a fraction");
  EXPECT_USER_ERROR(parse_faults("explode=0.1"), "kind 'explode' is unknown");
  EXPECT_USER_ERROR(parse_faults("crash=0.6,hang=0.6"), "add up to more than 1");
}

TEST(TaskScheduler, GradientPicksUnmeasuredFirstThenTheBiggestWeightedGain) {
  TaskStats a{"dense", 1e9, 12, {2.0, 1.9, 1.9, 1.9}, false};
  TaskStats b{"conv2d", 1e9, 1, {2.0, 1.0, 0.5, 0.4}, false};
  TaskStats fresh{"conv2d", 1e8, 1, {}, false};
  EXPECT_EQ(pick_by_gradient({a, b, fresh}), 2u);
  // Equal curves: the heavier task wins. Same weights: the one still improving.
  TaskStats a1 = b;
  a1.weight = 12;
  EXPECT_EQ(pick_by_gradient({b, a1}), 1u);
  TaskStats flat = b;
  flat.history = {0.4, 0.4, 0.4, 0.4};
  EXPECT_EQ(pick_by_gradient({flat, b}), 1u);
  a.exhausted = b.exhausted = true;
  EXPECT_EQ(pick_by_gradient({a, b}), 2u);
  EXPECT_USER_ERROR(parse_schedule_policy("fifo"), "unknown scheduler 'fifo'");
}

}  // namespace
}  // namespace loom
