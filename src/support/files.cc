#include "support/files.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "loom/error.h"

namespace loom {

namespace {

// mkdir -p; false when some component cannot be made a directory.
bool make_directories(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string environment(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string cache_directory() {
  std::string dir = environment("LOOM_CACHE_DIR");
  if (dir.empty() && !environment("XDG_CACHE_HOME").empty()) dir = environment("XDG_CACHE_HOME") + "/loom";
  if (dir.empty() && !environment("HOME").empty()) dir = environment("HOME") + "/.cache/loom";
  if (dir.empty()) dir = "/tmp/loom-cache-" + std::to_string(getuid());
  create_directories(dir, "cache directory");
  return dir;
}

void create_directories(const std::string& dir, const std::string& role) {
  if (!make_directories(dir))
    throw UserError(role + " '" + dir + "' cannot be created (" + std::strerror(errno) +
                    "); set LOOM_CACHE_DIR to a writable directory");
}

namespace {

// The directory of the library or executable holding this code.
std::string code_directory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&code_directory), &info) == 0 || !info.dli_fname) return "";
  std::string here = info.dli_fname;
  return here.find('/') == std::string::npos ? "." : here.substr(0, here.rfind('/'));
}

}  // namespace

std::string hwspec_directory() {
  auto is_dir = [](const std::string& d) {
    struct stat st;
    return stat(d.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  std::string dir = environment("LOOM_HWSPEC_DIR");
  if (!dir.empty()) return dir;
  const std::string here = code_directory();
  if (here.empty()) return "";
  for (const char* relative : {"/../share/loom/hwspecs", "/share/loom/hwspecs"})
    if (is_dir(here + relative)) return here + relative;
  return "";
}

std::string helper_program(const std::string& name, const char* env_name) {
  std::string path = environment(env_name);
  if (!path.empty()) return path;
  const std::string here = code_directory();
  if (here.empty()) return "";
  for (const char* relative : {"/", "/../", "/../bin/", "/../libexec/loom/"})
    if (access((here + relative + name).c_str(), X_OK) == 0) return here + relative + name;
  return "";
}

std::string write_file_atomically(const std::string& path, const std::string& contents) {
  std::string temp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(std::rand());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return "cannot create '" + temp + "': " + std::strerror(errno);
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      close(fd);
      unlink(temp.c_str());
      return "cannot write '" + temp + "': " + why;
    }
    done += size_t(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    unlink(temp.c_str());
    return "cannot flush '" + temp + "': " + std::strerror(errno);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    unlink(temp.c_str());
    return "cannot rename '" + temp + "' to '" + path + "': " + why;
  }
  return "";
}

std::optional<std::string> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::string fnv1a_hex(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ULL;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

namespace {
constexpr const char* kChecksumPrefix = "# checksum: ";
}

std::string with_checksum_line(const std::string& body) { return body + kChecksumPrefix + fnv1a_hex(body) + "\n"; }

std::optional<std::string> body_if_checksum_matches(const std::string& text) {
  const size_t at = text.rfind(kChecksumPrefix);
  if (at == std::string::npos || at == 0) return std::nullopt;
  std::string body = text.substr(0, at);
  if (text.substr(at) != std::string(kChecksumPrefix) + fnv1a_hex(body) + "\n") return std::nullopt;
  return body;
}

}  // namespace loom
