#include "driver/cached_build.h"

#include <optional>

#include "driver/compile_schedule.h"
#include "ir/size_binding.h"
#include "lower/lower.h"
#include "schedule/task.h"

namespace loom {

namespace {

std::string sizes_text(const std::vector<int64_t>& sizes) {
  std::string s;
  for (int64_t v : sizes) s += " " + std::to_string(v);
  return s;
}

// What every cached artefact depends on besides the operator and schedule.
std::string environment_text(const BuildRequest& r, codegen::Backend& backend) {
  return "threads=" + std::to_string(r.threads) + "\nhwspec=" + hwspec_fingerprint(r.target) +
         "\nloom=" LOOM_VERSION "\nlowering=" + std::to_string(kLoweringRevision) + "\ncodegen=" +
         backend.identity() + "\n";
}

std::optional<std::string> cache_load(const KernelCache* cache, const std::string& key,
                                      std::vector<std::string>& warnings) {
  if (!cache) return std::nullopt;
  std::string warning;
  std::optional<std::string> value = cache->load(key, warning);
  if (!warning.empty()) warnings.push_back(warning);
  return value;
}

void cache_store(const KernelCache* cache, const std::string& key, const std::string& value,
                 std::vector<std::string>& warnings) {
  if (!cache) return;
  std::string error = cache->store(key, value);
  if (!error.empty()) warnings.push_back("kernel cache not written: " + error);
}

// An object entry: the entry symbol, a newline, the object bytes.
std::string encode_object(const codegen::CodeObject& object) { return object.entry + "\n" + object.bytes; }
std::optional<codegen::CodeObject> decode_object(const std::string& value) {
  const size_t newline = value.find('\n');
  if (newline == std::string::npos || newline == 0) return std::nullopt;
  return codegen::CodeObject{value.substr(0, newline), value.substr(newline + 1), ""};
}

}  // namespace

BuiltCode build_code(const BuildRequest& r, bool cache_only, std::vector<std::string>& warnings) {
  std::unique_ptr<codegen::Backend> backend = codegen::make_backend(r.target);
  const std::string structure = structure_text(*r.op);
  const std::string environment = environment_text(r, *backend);
  const std::string request_key = "schedule of\n" + structure + "plan" + sizes_text(r.plan_sizes) + "\n" +
                                   options_text(*r.options) + "\n" + environment;
  auto object_key = [&](const std::string& schedule) {
    return "object of\n" + structure + "schedule\n" + schedule + "\n" + environment;
  };
  BuiltCode built;
  if (std::optional<std::string> schedule = cache_load(r.cache, request_key, warnings)) {
    if (std::optional<std::string> value = cache_load(r.cache, object_key(*schedule), warnings)) {
      if (std::optional<codegen::CodeObject> object = decode_object(*value)) {
        built.fn = backend->load(*object);
        built.schedule = *schedule;
        built.from_disk = true;
        return built;
      }
      warnings.push_back("kernel cache entry '" + r.cache->path_for(object_key(*schedule)) +
                         "' holds no object; rebuilding it");
    }
  }
  if (cache_only) return built;

  const Task task = make_task(*r.op, r.target, r.threads, 1, r.plan_sizes);
  std::string note;
  std::optional<Candidate> chosen;
  if (!r.options->records.empty()) chosen = record_candidate(task, r.options->records, note);
  if (!chosen) chosen = strategy_candidates(task, *r.options, 1).front();
  built.schedule = chosen->schedule.str();
  codegen::CodeObject object = backend->compile_object(lower(*r.op, chosen->schedule), /*with_ir=*/false);
  built.fn = backend->load(object);
  cache_store(r.cache, object_key(built.schedule), encode_object(object), warnings);
  cache_store(r.cache, request_key, built.schedule, warnings);
  return built;
}

}  // namespace loom
