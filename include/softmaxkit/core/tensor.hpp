// softmaxkit: the non-owning tensor view every public op takes.
//
// A view is a data pointer, an element type, a device, a shape and strides in elements (not bytes), all sizes
// 64-bit. It owns nothing and never allocates. Inputs are passed as views too; an op never writes through a view
// it documents as an input.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "softmaxkit/core/dtype.hpp"

namespace smk {

struct Device {
  enum class Kind : std::uint8_t { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;  // CUDA device ordinal; 0 for the CPU

  static constexpr Device cpu() { return {Kind::cpu, 0}; }
  static constexpr Device cuda(int ordinal = 0) { return {Kind::cuda, ordinal}; }
  constexpr bool is_cpu() const { return kind == Kind::cpu; }
  constexpr bool is_cuda() const { return kind == Kind::cuda; }
  friend constexpr bool operator==(Device a, Device b) { return a.kind == b.kind && a.index == b.index; }
  std::string str() const;  // "cpu" or "cuda:N"
};

// The DType of a C++ element type, for TensorView::of.
template <typename T>
struct dtype_of;
template <DType D>
struct dtype_constant {
  static constexpr DType value = D;
};
template <> struct dtype_of<float> : dtype_constant<DType::f32> {};
template <> struct dtype_of<double> : dtype_constant<DType::f64> {};
template <> struct dtype_of<half_t> : dtype_constant<DType::f16> {};
template <> struct dtype_of<bfloat16_t> : dtype_constant<DType::bf16> {};
template <> struct dtype_of<bool> : dtype_constant<DType::b8> {};
template <> struct dtype_of<std::int32_t> : dtype_constant<DType::i32> {};
template <> struct dtype_of<std::int64_t> : dtype_constant<DType::i64> {};

struct TensorView {
  static constexpr int kMaxRank = 8;

  void* data = nullptr;
  DType dtype = DType::f32;
  Device device{};
  int rank = 0;
  std::int64_t shape[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};  // in elements

  // Row-major (C-contiguous) view over `data`.
  static TensorView contiguous(void* data, DType dtype, Device device, std::initializer_list<std::int64_t> shape);
  // View with explicit strides (in elements); `shape` and `strides` must have the same length.
  static TensorView strided(void* data, DType dtype, Device device, std::initializer_list<std::int64_t> shape,
                            std::initializer_list<std::int64_t> strides);

  // Typed conveniences: the dtype follows the pointer. A const pointer is for views the op only reads.
  template <typename T>
  static TensorView of(T* data, std::initializer_list<std::int64_t> shape, Device device = Device::cpu()) {
    return contiguous(static_cast<void*>(data), dtype_of<T>::value, device, shape);
  }
  template <typename T>
  static TensorView of(const T* data, std::initializer_list<std::int64_t> shape, Device device = Device::cpu()) {
    return contiguous(const_cast<T*>(data), dtype_of<T>::value, device, shape);
  }

  // Product of the shape; 1 for rank 0. Assumes a validated view (no overflow).
  std::int64_t numel() const;
  bool is_contiguous() const;
  std::string shape_str() const;  // "[2, 3]"
};

}  // namespace smk
