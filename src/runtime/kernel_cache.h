// Compiled kernels kept on disk, so a later process starts warm.
//
// An entry maps a key (text naming everything the value depends on: the
// operator's structure, sizes, schedule, hwspec fingerprint, loom and LLVM
// versions) to bytes. It lives in <directory>/kernels/<hash of key>.bin,
// holding the key itself (so a hash collision reads as a miss), the value
// and a checksum line. Writes go to a temporary file renamed into place, so
// processes sharing the directory see a whole entry or none; a truncated,
// corrupt or foreign file is reported as a warning and treated as a miss,
// and the rebuilt entry replaces it.
//
// The directory is bounded: a hit refreshes its file's modification time,
// and a store that finds the entries over `max_bytes` removes the least
// recently used ones down to 3/4 of it (another process reading one of them
// then misses and rebuilds it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace loom {

class KernelCache {
 public:
  // `directory` is created when missing; UserError when it cannot be.
  explicit KernelCache(const std::string& directory, int64_t max_bytes = kDefaultMaxBytes);
  static constexpr int64_t kDefaultMaxBytes = int64_t(1) << 30;

  // The value stored under `key`; nothing when there is none or the file
  // is damaged (then `warning` says which file and why).
  std::optional<std::string> load(const std::string& key, std::string& warning) const;
  // Stores `value` under `key`; an error message when it could not (the
  // cache is an optimisation: callers go on without it), else empty.
  std::string store(const std::string& key, const std::string& value) const;

  std::string path_for(const std::string& key) const;

 private:
  void trim() const;  // removes least recently used entries beyond max_bytes_

  std::string directory_;
  int64_t max_bytes_;
};

}  // namespace loom
