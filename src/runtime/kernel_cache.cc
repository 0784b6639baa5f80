#include "runtime/kernel_cache.h"

#include "support/files.h"

namespace loom {

namespace {
constexpr const char* kMagic = "loom kernel cache 1\n";
}

KernelCache::KernelCache(const std::string& directory) : directory_(directory + "/kernels") {
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
  return body->substr(header.size());
}

std::string KernelCache::store(const std::string& key, const std::string& value) const {
  const std::string body = std::string(kMagic) + std::to_string(key.size()) + "\n" + key + value;
  return write_file_atomically(path_for(key), with_checksum_line(body));
}

}  // namespace loom
