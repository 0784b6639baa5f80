// Scratch memory for generated code (loom_alloc / loom_free).
//
// Blocks freed by generated code stay with their thread for the next call:
// kernels allocate the same packing buffers on every call, and fresh large
// blocks would come from mmap with new page faults each time. The cache is
// bounded (a few blocks, kMaxCachedBytes in all per thread) and released
// when its thread ends.
//
// Running out of memory cannot unwind through JIT frames, so loom_alloc
// returns null, the generated code skips the work that needed the block, and
// the failed size is recorded; the host side (the kernel's call) reads it
// with loom_take_alloc_failure and raises a UserError naming it.
#include <atomic>
#include <cstdlib>
#include <vector>

#include "runtime/runtime_abi.h"

namespace {

constexpr int kKeep = 8;
constexpr size_t kMaxCachedBytes = size_t(256) << 20;

struct ScratchCache {
  std::pair<void*, size_t> blocks[kKeep] = {};
  size_t cached_bytes = 0;
  std::vector<std::pair<void*, size_t>> live;  // handed out: pointer -> capacity
  ~ScratchCache() {
    for (auto& b : blocks) std::free(b.first);
  }
};
thread_local ScratchCache scratch;

std::atomic<int64_t> alloc_failure{0};

}  // namespace

extern "C" void* loom_alloc(int64_t bytes) {
  if (bytes < 0 || uint64_t(bytes) > (uint64_t(1) << 48)) {
    alloc_failure.store(bytes);
    return nullptr;
  }
  size_t rounded = (size_t(bytes > 0 ? bytes : 1) + 63) & ~size_t(63);
  void* p = nullptr;
  for (auto& b : scratch.blocks)
    if (b.first && b.second >= rounded) {
      p = b.first;
      rounded = b.second;
      scratch.cached_bytes -= b.second;
      b = {nullptr, 0};
      break;
    }
  if (!p) p = std::aligned_alloc(64, rounded);
  if (!p) {
    alloc_failure.store(bytes);
    return nullptr;
  }
  scratch.live.emplace_back(p, rounded);
  return p;
}

extern "C" void loom_free(void* ptr) {
  if (!ptr) return;
  size_t capacity = 0;
  for (size_t i = 0; i < scratch.live.size(); ++i)
    if (scratch.live[i].first == ptr) {
      capacity = scratch.live[i].second;
      scratch.live.erase(scratch.live.begin() + long(i));
      break;
    }
  if (scratch.cached_bytes + capacity <= kMaxCachedBytes)
    for (auto& b : scratch.blocks)
      if (!b.first) {
        b = {ptr, capacity};
        scratch.cached_bytes += capacity;
        return;
      }
  std::free(ptr);
}

extern "C" int64_t loom_take_alloc_failure() { return alloc_failure.exchange(0); }
