#include "search/records.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "loom/error.h"

#ifndef LOOM_VERSION
#error "LOOM_VERSION must be defined by the build"
#endif

namespace loom {

namespace {

std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

Record make_record(const Task& task, const std::string& strategy, const Candidate& candidate,
                   const MeasureResult& result) {
  Record r;
  r.workload = task.workload_key;
  r.op = task.op.name;
  r.params = task.op.params;
  r.hwspec = task.target.name;
  r.hwspec_fingerprint = hwspec_fingerprint(task.target);
  r.loom_version = LOOM_VERSION;
  r.strategy = strategy;
  r.threads = task.threads;
  if (candidate.state)
    for (const Step& s : candidate.state->history()) r.steps.push_back(s.str());
  r.times_ms = result.samples_ms;
  r.time_ms = result.time_ms;
  r.error = to_string(result.error);
  r.error_msg = result.message;
  r.timestamp = utc_now();
  return r;
}

std::string to_json_line(const Record& r) {
  nlohmann::json j = {{"workload", r.workload}, {"op", r.op},
                      {"params", r.params},     {"hwspec", r.hwspec},
                      {"hwspec_fingerprint", r.hwspec_fingerprint},
                      {"loom_version", r.loom_version}, {"steps_version", r.steps_version},
                      {"strategy", r.strategy}, {"threads", r.threads},
                      {"steps", r.steps},       {"times_ms", r.times_ms},
                      {"time_ms", r.time_ms},   {"error", r.error},
                      {"error_msg", r.error_msg},
                      {"timestamp", r.timestamp}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<Record> parse_record(const std::string& line, std::string& error) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error = "not a JSON object (torn or corrupt line)";
    return std::nullopt;
  }
  try {
    Record r;
    r.workload = j.at("workload").get<std::string>();
    r.op = j.at("op").get<std::string>();
    r.params = j.at("params").get<std::map<std::string, std::string>>();
    r.hwspec = j.at("hwspec").get<std::string>();
    r.hwspec_fingerprint = j.at("hwspec_fingerprint").get<std::string>();
    r.loom_version = j.value("loom_version", "");
    r.steps_version = j.value("steps_version", 1);
    if (r.steps_version != kStepsVersion) {
      error = "steps_version " + std::to_string(r.steps_version) + " (loom " + r.loom_version +
              ") replays to other states in this loom (steps_version " + std::to_string(kStepsVersion) + ")";
      return std::nullopt;
    }
    r.strategy = j.value("strategy", "");
    r.threads = j.at("threads").get<int>();
    r.steps = j.at("steps").get<std::vector<std::string>>();
    r.times_ms = j.value("times_ms", std::vector<double>{});
    r.time_ms = j.at("time_ms").get<double>();
    r.error = j.at("error").get<std::string>();
    r.error_msg = j.value("error_msg", "");
    r.timestamp = j.value("timestamp", "");
    if (r.threads < 1 || r.threads > 4096) {
      error = "threads " + std::to_string(r.threads) + " out of range [1, 4096]";
      return std::nullopt;
    }
    if (r.ok() && !(r.time_ms > 0 && r.time_ms < 1e9)) {
      error = "time_ms " + std::to_string(r.time_ms) + " out of range (0, 1e9)";
      return std::nullopt;
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    error = std::string("missing or mistyped field: ") + e.what();
    return std::nullopt;
  }
}

RecordWriter::RecordWriter(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  LOOM_USER_CHECK(fd_ >= 0, "cannot open records file '", path, "' for appending: ", std::strerror(errno));
  struct stat st;
  if (fstat(fd_, &st) == 0 && st.st_size > 0) {
    // A torn last line (a kill mid-write) must not swallow the next record.
    int rd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    char last = '\n';
    if (rd >= 0) {
      if (pread(rd, &last, 1, st.st_size - 1) != 1) last = '\n';
      ::close(rd);
    }
    if (last != '\n' && ::write(fd_, "\n", 1) != 1) {
      ::close(fd_);
      throw UserError("cannot write to records file '" + path + "': " + std::strerror(errno));
    }
  }
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void RecordWriter::append(const std::vector<Record>& records) {
  std::string text;
  for (const Record& r : records) text += to_json_line(r) + "\n";
  for (size_t off = 0; off < text.size();) {
    ssize_t w = ::write(fd_, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    LOOM_USER_CHECK(w > 0, "cannot write to records file '", path_, "': ", std::strerror(errno));
    off += size_t(w);
  }
  LOOM_USER_CHECK(::fsync(fd_) == 0, "cannot sync records file '", path_, "': ", std::strerror(errno));
}

std::vector<Record> load_records(const std::string& path, std::vector<std::string>& warnings) {
  std::vector<Record> out;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return out;
  LOOM_USER_CHECK(S_ISREG(st.st_mode), "records path '", path, "' exists but is not a regular file");
  std::ifstream in(path);
  LOOM_USER_CHECK(in.good(), "cannot read records file '", path, "'");
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string error;
    if (auto r = parse_record(line, error)) out.push_back(std::move(*r));
    else warnings.push_back(path + ":" + std::to_string(line_no) + ": skipped: " + error);
  }
  return out;
}

std::optional<Record> best_record(const std::vector<Record>& records, const Task& task) {
  const std::string fp = hwspec_fingerprint(task.target);
  std::optional<Record> best;
  auto better = [&](const Record& r) {
    if (!best) return true;
    bool same = r.threads == task.threads, best_same = best->threads == task.threads;
    return same != best_same ? same : r.time_ms < best->time_ms;
  };
  for (const Record& r : records)
    if (r.ok() && r.workload == task.workload_key && r.hwspec_fingerprint == fp && better(r)) best = r;
  return best;
}

MeasureResult measure_result(const Record& r) {
  MeasureResult m;
  m.samples_ms = r.times_ms;
  m.time_ms = r.ok() ? r.time_ms : 0;
  m.message = r.error_msg;
  if (!r.ok()) m.error = r.error == "timeout" ? MeasureError::Timeout
                         : r.error == "crash" ? MeasureError::Crash
                         : r.error == "wrong" ? MeasureError::Wrong
                         : r.error == "compile" ? MeasureError::Compile
                                                : MeasureError::Runtime;
  return m;
}

State replay_record(const Record& r, const Task& task, std::string& error) {
  try {
    std::string text;
    for (const std::string& s : r.steps) text += s + "\n";
    return replay(*task.anchor, task.target, parse_steps(text));
  } catch (const UserError& e) {
    error = e.what();
    return nullptr;
  }
}

}  // namespace loom
