#include "runtime/kernel_cache.h"

#include <sys/stat.h>
#include <utime.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "loom/error.h"
#include "support/files.h"

namespace loom {

namespace {
constexpr const char* kMagic = "loom kernel cache 1\n";
}

KernelCache::KernelCache(const std::string& directory, int64_t max_bytes)
    : directory_(directory + "/kernels"), max_bytes_(max_bytes) {
  LOOM_USER_CHECK(max_bytes > 0, "kernel cache size limit ", max_bytes, " bytes must be positive");
  create_directories(directory_, "kernel cache directory");
}

std::string KernelCache::path_for(const std::string& key) const { return directory_ + "/" + fnv1a_hex(key) + ".bin"; }

std::optional<std::string> KernelCache::load(const std::string& key, std::string& warning) const {
  const std::string path = path_for(key);
  std::optional<std::string> text = read_whole_file(path);
  if (!text) return std::nullopt;
  std::optional<std::string> body = body_if_checksum_matches(*text);
  const std::string header = std::string(kMagic) + std::to_string(key.size()) + "\n" + key;
  if (!body) {
    warning = "kernel cache entry '" + path + "' is truncated or corrupt (checksum mismatch); rebuilding it";
    return std::nullopt;
  }
  if (body->compare(0, header.size(), header) != 0) {
    // Another key with the same hash, or an older format: a miss, not damage.
    if (body->compare(0, std::string(kMagic).size(), kMagic) != 0)
      warning = "kernel cache entry '" + path + "' is not in loom's format; rebuilding it";
    return std::nullopt;
  }
  utime(path.c_str(), nullptr);  // recently used: trimmed last
  return body->substr(header.size());
}

std::string KernelCache::store(const std::string& key, const std::string& value) const {
  const std::string body = std::string(kMagic) + std::to_string(key.size()) + "\n" + key + value;
  std::string error = write_file_atomically(path_for(key), with_checksum_line(body));
  if (error.empty()) trim();
  return error;
}

void KernelCache::trim() const {
  namespace fs = std::filesystem;
  struct Entry {
    fs::file_time_type used;
    int64_t bytes;
    fs::path path;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(directory_, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".bin") continue;
    std::error_code e1, e2;
    const auto bytes = it->file_size(e1);
    const auto used = it->last_write_time(e2);
    if (e1 || e2) continue;  // removed meanwhile by another process
    entries.push_back({used, int64_t(bytes), it->path()});
    total += int64_t(bytes);
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_ / 4 * 3) break;
    if (fs::remove(e.path, ec)) total -= e.bytes;
  }
}

}  // namespace loom
