#include <algorithm>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "loom/buffer.h"
#include "loom/error.h"
#include "support/checked.h"

namespace loom {

namespace {
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// Bytes of a buffer of `shape`, rounded up to whole cache lines.
int64_t buffer_bytes(const std::vector<int64_t>& shape, DType type, const std::string& shape_text) {
  const std::string what = "a buffer of shape " + shape_text;
  int64_t bytes = checked_mul(std::max<int64_t>(checked_product(shape, what), 1), type.bytes(), what);
  return checked_add(bytes, 63, what) & ~int64_t(63);
}
// Buffers of 2 MiB and more sit on transparent huge pages where the kernel
// allows them: fewer TLB misses, and cache-set placement fixed by the
// virtual address, so a kernel runs at the same speed in every process
// (with 4 KiB pages, physical placement changes which strided accesses
// conflict in the caches, from one allocation to the next).
void* allocate_bytes(size_t bytes) {
  constexpr size_t kHuge = size_t(Buffer::kHugePageBytes);
  if (bytes < kHuge) return std::aligned_alloc(64, bytes);
  void* p = std::aligned_alloc(kHuge, (bytes + kHuge - 1) & ~(kHuge - 1));
  if (p) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure changes nothing
  return p;
}

}  // namespace

Buffer Buffer::allocate(std::vector<int64_t> shape, DType type) {
  Buffer b;
  b.dtype_ = type;
  b.shape_ = std::move(shape);
  const size_t bytes = size_t(buffer_bytes(b.shape_, type, b.shape_str()));
  b.strides_ = row_major_strides(b.shape_);
  void* p = allocate_bytes(bytes);
  LOOM_USER_CHECK(p != nullptr, "cannot allocate a buffer of ", bytes, " bytes for shape ", b.shape_str());
  std::memset(p, 0, bytes);
  b.owner_ = std::shared_ptr<void>(p, std::free);
  b.data_ = p;
  return b;
}

Buffer Buffer::borrow(void* data, std::vector<int64_t> shape, DType type, std::vector<int64_t> strides) {
  buffer_bytes(shape, type, "borrowed");
  LOOM_USER_CHECK(strides.empty() || strides.size() == shape.size(), "borrowed buffer has ", shape.size(),
                  " dimensions but ", strides.size(), " strides");
  Buffer b;
  b.dtype_ = type;
  b.shape_ = std::move(shape);
  b.strides_ = strides.empty() ? row_major_strides(b.shape_) : std::move(strides);
  b.data_ = data;
  return b;
}

int64_t Buffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

bool Buffer::is_contiguous() const {  // without allocating: it is on every kernel call's path
  if (strides_.size() != shape_.size()) return false;
  int64_t expected = 1;
  for (size_t d = shape_.size(); d-- > 0;) {
    if (strides_[d] != expected) return false;
    expected *= shape_[d];
  }
  return true;
}

std::string Buffer::shape_str() const {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape_.size(); ++i) os << (i ? ", " : "") << shape_[i];
  os << "]";
  return os.str();
}

}  // namespace loom
