// Buffers: the data kernels read and write.
//
// A Buffer has a dtype, a shape and strides (in elements), and either owns its
// memory (allocate) or borrows a caller's pointer (borrow), in which case the
// caller keeps the memory alive. Copies of a Buffer share the same memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/dtype.h"

namespace loom {

class Buffer {
 public:
  Buffer() = default;

  // Buffers at least this large are aligned to it and advised onto huge
  // pages, which fix their cache-set placement by the virtual address.
  static constexpr int64_t kHugePageBytes = int64_t(2) << 20;

  // Zero-filled, 64-byte aligned (kHugePageBytes and on huge pages when at
  // least that large), row-major.
  static Buffer allocate(std::vector<int64_t> shape, DType type = DType::f32());
  // Wraps caller memory. Empty strides mean row-major.
  static Buffer borrow(void* data, std::vector<int64_t> shape, DType type = DType::f32(),
                       std::vector<int64_t> strides = {});

  void* data() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t numel() const;
  bool is_contiguous() const;
  bool defined() const { return data_ != nullptr || numel() == 0; }
  std::string shape_str() const;

 private:
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  DType dtype_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
};

}  // namespace loom
