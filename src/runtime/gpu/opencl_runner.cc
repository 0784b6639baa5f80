#include "runtime/gpu/opencl_runner.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>

#include "loom/error.h"
#include "runtime/gpu/opencl_protocol.h"
#include "support/files.h"

namespace loom {

namespace {

namespace p = opencl_protocol;

class Runner {
 public:
  static Runner& get() {
    static Runner* runner = new Runner;  // the child outlives static destructors; the OS reaps it at exit
    return *runner;
  }

  std::string run(const std::string& source, const GpuCall& call) {
    std::lock_guard<std::mutex> lock(mutex_);
    start();
    if (!send_request(source, call)) fail("the request could not be sent");
    uint8_t ok = 0;
    std::string message;
    if (!p::get(fd_, ok) || !p::get_string(fd_, message, p::kMaxBytes)) fail("it sent no answer");
    if (!ok) {
      if (message.rfind("OpenCL build failed", 0) == 0) throw InternalError("generated OpenCL C: " + message);
      throw UserError("OpenCL: " + message);
    }
    for (const GpuCallBuffer& b : call.buffers)
      if (b.download && !p::read_all(fd_, b.host, b.bytes)) fail("it sent a short answer");
    return message;
  }

 private:
  void start() {
    if (fd_ >= 0) return;
    const std::string path = helper_program("loom-opencl-runner", "LOOM_OPENCL_RUNNER");
    if (path.empty())
      throw UserError("no loom-opencl-runner found beside the loom library (set LOOM_OPENCL_RUNNER; it is built "
                      "when the OpenCL headers and ICD loader are installed)");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw UserError("socketpair failed");
    const pid_t pid = fork();
    if (pid < 0) {
      close(sv[0]);
      close(sv[1]);
      throw UserError("cannot start " + path + ": fork failed");
    }
    if (pid == 0) {
      dup2(sv[1], 0);
      dup2(sv[1], 1);
      execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(sv[1]);
    fd_ = sv[0];
    pid_ = pid;
    path_ = path;
  }

  bool send_request(const std::string& source, const GpuCall& call) {
    bool ok = p::put(fd_, p::kMagic) && p::put_string(fd_, source) &&
              p::put<uint32_t>(fd_, uint32_t(call.buffers.size()));
    for (const GpuCallBuffer& b : call.buffers) {
      ok = ok && p::put<uint64_t>(fd_, b.bytes) && p::put<uint8_t>(fd_, b.host != nullptr);
      if (b.host) ok = ok && p::write_all(fd_, b.host, b.bytes);
      ok = ok && p::put<uint8_t>(fd_, b.download);
    }
    ok = ok && p::put<uint32_t>(fd_, uint32_t(call.sizes.size()));
    for (int64_t s : call.sizes) ok = ok && p::put(fd_, s);
    ok = ok && p::put<uint32_t>(fd_, uint32_t(call.launches.size()));
    for (const GpuCallLaunch& l : call.launches)
      ok = ok && p::put_string(fd_, l.kernel) && p::put<uint64_t>(fd_, l.grid) && p::put<uint32_t>(fd_, l.threads);
    return ok;
  }

  // The child died or broke the protocol: reap it, and start a new one next time.
  [[noreturn]] void fail(const std::string& why) {
    close(fd_);
    fd_ = -1;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                          : "exit status " + std::to_string(WEXITSTATUS(status));
    throw InternalError("loom-opencl-runner (" + path_ + ") failed: " + why + " (" + how + ")");
  }

  std::mutex mutex_;
  int fd_ = -1;
  pid_t pid_ = -1;
  std::string path_;
};

}  // namespace

std::string run_opencl(const std::string& source, const GpuCall& call) { return Runner::get().run(source, call); }

bool opencl_available(std::string* why) {
  static const std::pair<bool, std::string> probe = [] {
    try {
      const std::string device = run_opencl("__kernel void probe(void) {}\n", GpuCall{});
      return std::pair<bool, std::string>{true, device};
    } catch (const std::exception& e) {
      return std::pair<bool, std::string>{false, e.what()};
    }
  }();
  if (why) *why = probe.second;
  return probe.first;
}

}  // namespace loom
