// Element types. fp32 is the only type the code generators handle today, but
// every tensor and expression carries a DType so that fp16/bf16/int8 can be
// added without changing the IR's shape.
#pragma once

#include <cstdint>
#include <string>

namespace loom {

enum class TypeCode : uint8_t { Float, Int, UInt, Bool };

struct DType {
  TypeCode code = TypeCode::Float;
  int bits = 32;

  static constexpr DType f32() { return {TypeCode::Float, 32}; }
  static constexpr DType f64() { return {TypeCode::Float, 64}; }
  static constexpr DType i64() { return {TypeCode::Int, 64}; }
  static constexpr DType i32() { return {TypeCode::Int, 32}; }
  static constexpr DType boolean() { return {TypeCode::Bool, 1}; }

  bool is_float() const { return code == TypeCode::Float; }
  bool is_int() const { return code == TypeCode::Int || code == TypeCode::UInt; }
  bool is_bool() const { return code == TypeCode::Bool; }
  int bytes() const { return bits < 8 ? 1 : bits / 8; }
  std::string str() const;

  friend bool operator==(DType a, DType b) { return a.code == b.code && a.bits == b.bits; }
  friend bool operator!=(DType a, DType b) { return !(a == b); }
};

// Parses "f32", "float32", "i64", ... Throws UserError naming the string.
DType parse_dtype(const std::string& name);

}  // namespace loom
