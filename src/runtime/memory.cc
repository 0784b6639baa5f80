#include "loom/memory.h"

#include <sys/resource.h>

#include <fstream>
#include <sstream>

#include "ir/size_binding.h"
#include "loom/error.h"
#include "support/checked.h"

namespace loom {

namespace {

int64_t read_int(const std::string& path) {
  std::ifstream in(path);
  int64_t v = -1;
  if (!(in >> v)) return -1;  // also "max" (no limit)
  return v;
}

int64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream ls(line.substr(13));
      int64_t kib = 0;
      ls >> kib;
      return kib * 1024;
    }
  return -1;
}

std::string gib(int64_t bytes) {
  std::ostringstream os;
  os.precision(3);
  os << double(bytes) / double(int64_t(1) << 30) << " GiB";
  return os.str();
}

}  // namespace

MemoryLimit memory_limit() {
  MemoryLimit m{int64_t(1) << 62, "no limit found"};
  auto consider = [&](int64_t bytes, const char* source) {
    if (bytes >= 0 && bytes < m.bytes) m = {bytes, source};
  };
  consider(mem_available(), "MemAvailable");
  const int64_t max = read_int("/sys/fs/cgroup/memory.max"), used = read_int("/sys/fs/cgroup/memory.current");
  if (max >= 0 && used >= 0) consider(std::max<int64_t>(0, max - used), "cgroup memory.max");
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) consider(int64_t(as.rlim_cur), "ulimit -v");
  return m;
}

int64_t run_memory_bytes(const Operator& op, const std::vector<int64_t>& sizes) {
  SizeBinding binding = bind_sizes(op, sizes.empty() ? std::vector<int64_t>(op.size_vars.size(), 64) : sizes);
  auto bytes_of = [&](const std::vector<te::Tensor>& tensors) {
    int64_t total = 0;
    for (const auto& t : tensors) {
      const std::string what = "the memory of tensor " + t.name();
      total = checked_add(total, checked_mul(checked_product(eval_shape(t.shape(), binding), what), 4, what), what);
    }
    return total;
  };
  const int64_t in = bytes_of(op.inputs), out = bytes_of(op.outputs);
  const std::string what = "the memory estimate of " + op.name;
  return checked_add(checked_mul(in, 2, what), checked_mul(out, 3, what), what);
}

void check_run_memory(const Operator& op, const std::vector<int64_t>& sizes) {
  const int64_t need = run_memory_bytes(op, sizes);
  const MemoryLimit limit = memory_limit();
  LOOM_USER_CHECK(need <= limit.bytes, op.name, " needs about ", gib(need),
                  " (inputs, outputs, packing scratch and the reference check), but this process can get ",
                  gib(limit.bytes), " (", limit.source, ")");
}

}  // namespace loom
