// The messages between loom and loom-opencl-runner, the helper process that
// runs OpenCL kernels. OpenCL implementations that compile with their own
// LLVM (PoCL) cannot share a process with loom's LLVM: both define the same
// unversioned symbols. So OpenCL runs in a child process, one request per
// kernel call, over a socket pair (sends never raise SIGPIPE when the other
// side is gone).
//
// Request:  "LOCL", source, buffer count, per buffer (bytes, upload flag,
//           the bytes when uploaded, download flag), size count, the sizes
//           (int64), launch count, per launch (kernel name, grid, threads).
//           Every kernel takes every buffer, then every size.
// Response: ok flag, a message (the device on success, the error
//           otherwise), then each downloaded buffer's bytes.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace loom::opencl_protocol {

inline bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
  }
  return true;
}

inline bool read_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
  }
  return true;
}

template <typename T>
bool put(int fd, T v) { return write_all(fd, &v, sizeof v); }
template <typename T>
bool get(int fd, T& v) { return read_all(fd, &v, sizeof v); }

inline bool put_string(int fd, const std::string& s) {
  return put<uint64_t>(fd, s.size()) && write_all(fd, s.data(), s.size());
}
inline bool get_string(int fd, std::string& s, uint64_t limit) {
  uint64_t n = 0;
  if (!get(fd, n) || n > limit) return false;
  s.resize(n);
  return read_all(fd, s.data(), n);
}

constexpr uint32_t kMagic = 0x4c4f434c;  // "LOCL"
constexpr uint64_t kMaxBytes = uint64_t(1) << 36;

}  // namespace loom::opencl_protocol
