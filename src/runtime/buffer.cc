#include <cstdlib>
#include <cstring>
#include <sstream>

#include "loom/buffer.h"
#include "loom/error.h"

namespace loom {

namespace {
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

void check_shape(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    LOOM_USER_CHECK(d >= 0, "buffer dimension ", d, " is negative");
    LOOM_USER_CHECK(!__builtin_mul_overflow(n, d, &n), "buffer shape overflows int64");
  }
}
}  // namespace

Buffer Buffer::allocate(std::vector<int64_t> shape, DType type) {
  check_shape(shape);
  Buffer b;
  b.dtype_ = type;
  b.shape_ = std::move(shape);
  b.strides_ = row_major_strides(b.shape_);
  size_t bytes = (size_t(std::max<int64_t>(b.numel(), 1)) * type.bytes() + 63) & ~size_t(63);
  void* p = std::aligned_alloc(64, bytes);
  LOOM_USER_CHECK(p != nullptr, "cannot allocate a buffer of ", bytes, " bytes for shape ", b.shape_str());
  std::memset(p, 0, bytes);
  b.owner_ = std::shared_ptr<void>(p, std::free);
  b.data_ = p;
  return b;
}

Buffer Buffer::borrow(void* data, std::vector<int64_t> shape, DType type, std::vector<int64_t> strides) {
  check_shape(shape);
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

bool Buffer::is_contiguous() const { return strides_ == row_major_strides(shape_); }

std::string Buffer::shape_str() const {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape_.size(); ++i) os << (i ? ", " : "") << shape_[i];
  os << "]";
  return os.str();
}

}  // namespace loom
