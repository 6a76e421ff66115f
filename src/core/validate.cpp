#include "core/validate.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "softmaxkit/core/error.hpp"

namespace smk::detail {

namespace {

bool known_dtype(DType t) { return static_cast<unsigned>(t) <= static_cast<unsigned>(DType::i64); }

// Highest element offset a view addresses (strides ≥ 0 assumed), or -1 when it overflows.
std::int64_t max_offset(const TensorView& v) {
  std::int64_t total = 0;
  for (int d = 0; d < v.rank; ++d) {
    if (v.shape[d] == 0) return 0;
    std::int64_t term;
    if (__builtin_mul_overflow(v.shape[d] - 1, v.strides[d], &term)) return -1;
    if (__builtin_add_overflow(total, term, &total)) return -1;
  }
  return total;
}
}  // namespace

void check_view(const char* op, const char* arg, const TensorView& v) {
  if (v.rank < 0 || v.rank > TensorView::kMaxRank)
    throw_invalid_argument(op, arg, "rank " + std::to_string(v.rank) + " is outside [0, " +
                                        std::to_string(TensorView::kMaxRank) + "]");
  if (!known_dtype(v.dtype))
    throw_invalid_argument(op, arg, "unknown dtype code " + std::to_string(static_cast<int>(v.dtype)));
  if (v.device.index < 0)
    throw_invalid_argument(op, arg, "device index " + std::to_string(v.device.index) + " is negative");
  std::int64_t numel = 1;
  for (int d = 0; d < v.rank; ++d) {
    if (v.shape[d] < 0)
      throw_invalid_argument(op, arg, "size " + std::to_string(v.shape[d]) + " of dimension " + std::to_string(d) +
                                          " is negative (shape " + v.shape_str() + ")");
    if (v.strides[d] < 0)
      throw_invalid_argument(op, arg, "stride " + std::to_string(v.strides[d]) + " of dimension " +
                                          std::to_string(d) + " is negative; negative strides are not supported");
    if (__builtin_mul_overflow(numel, v.shape[d], &numel))
      throw_invalid_argument(op, arg, "element count of shape " + v.shape_str() + " overflows 64 bits");
  }
  if (numel == 0) return;
  if (v.data == nullptr) throw_invalid_argument(op, arg, "data is null for a non-empty tensor of shape " + v.shape_str());
  const std::int64_t last = max_offset(v);
  std::int64_t bytes;
  if (last < 0 || __builtin_mul_overflow(last + 1, static_cast<std::int64_t>(dtype_size(v.dtype)), &bytes))
    throw_invalid_argument(op, arg, "shape " + v.shape_str() + " with its strides addresses more than 2^63 bytes");
  const auto base = reinterpret_cast<std::uintptr_t>(v.data);
  if (base > UINTPTR_MAX - static_cast<std::uintptr_t>(bytes))
    throw_invalid_argument(op, arg, "the tensor's extent wraps around the address space");
}

int normalize_dim(const char* op, const char* arg, int dim, int rank) {
  const int d = dim < 0 ? dim + rank : dim;
  if (rank == 0 || d < 0 || d >= rank)
    throw_invalid_argument(op, arg, "dim " + std::to_string(dim) + " is out of range for a tensor of rank " +
                                        std::to_string(rank));
  return d;
}

void check_same_shape(const char* op, const char* arg, const TensorView& v, const char* ref_arg,
                      const TensorView& ref) {
  bool same = v.rank == ref.rank;
  for (int d = 0; same && d < v.rank; ++d) same = v.shape[d] == ref.shape[d];
  if (!same)
    throw_invalid_argument(op, arg, "shape " + v.shape_str() + " does not match '" + ref_arg + "' shape " +
                                        ref.shape_str());
}

void check_shape(const char* op, const char* arg, const TensorView& v, std::initializer_list<std::int64_t> shape) {
  bool ok = v.rank == static_cast<int>(shape.size());
  int d = 0;
  for (std::int64_t s : shape) ok = ok && v.shape[d++] == s;
  if (!ok) {
    std::string want = "[";
    for (std::int64_t s : shape) want += (want.size() > 1 ? ", " : "") + std::to_string(s);
    throw_invalid_argument(op, arg, "shape " + v.shape_str() + " should be " + want + "]");
  }
}

void check_same_device(const char* op, const char* arg, const TensorView& v, const char* ref_arg,
                       const TensorView& ref) {
  if (!(v.device == ref.device))
    throw_invalid_argument(op, arg, "is on " + v.device.str() + " but '" + ref_arg + "' is on " + ref.device.str());
}

void check_dtype_in(const char* op, const char* arg, const TensorView& v, std::initializer_list<DType> allowed) {
  if (std::find(allowed.begin(), allowed.end(), v.dtype) != allowed.end()) return;
  std::string list;
  for (DType t : allowed) list += std::string(list.empty() ? "" : ", ") + dtype_name(t);
  throw_invalid_argument(op, arg, std::string("dtype ") + dtype_name(v.dtype) + " is not supported here (expected one of " +
                                      list + ")");
}

void check_writable(const char* op, const char* arg, const TensorView& v) {
  if (v.numel() == 0) return;  // nothing is written; NumPy gives empty arrays zero strides
  std::array<int, TensorView::kMaxRank> order{};
  int n = 0;
  for (int d = 0; d < v.rank; ++d)
    if (v.shape[d] > 1) order[n++] = d;
  for (int i = 1; i < n; ++i)  // insertion sort by stride; n ≤ kMaxRank
    for (int j = i; j > 0 && v.strides[order[j]] < v.strides[order[j - 1]]; --j) std::swap(order[j], order[j - 1]);
  std::int64_t min_stride = 1;  // the next dimension must step past everything the smaller ones address
  for (int i = 0; i < n; ++i) {
    const int d = order[i];
    if (v.strides[d] < min_stride)
      throw_invalid_argument(op, arg, "strides of shape " + v.shape_str() +
                                          " make several elements share one address; an output must not overlap "
                                          "itself");
    min_stride = v.strides[d] * v.shape[d];
  }
}

Overlap overlap(const TensorView& a, const TensorView& b) {
  if (a.numel() == 0 || b.numel() == 0) return Overlap::none;
  const auto lo_a = reinterpret_cast<std::uintptr_t>(a.data);
  const auto lo_b = reinterpret_cast<std::uintptr_t>(b.data);
  const auto hi_a = lo_a + static_cast<std::uintptr_t>(max_offset(a) + 1) * dtype_size(a.dtype);
  const auto hi_b = lo_b + static_cast<std::uintptr_t>(max_offset(b) + 1) * dtype_size(b.dtype);
  if (hi_a <= lo_b || hi_b <= lo_a) return Overlap::none;
  bool identical = a.data == b.data && dtype_size(a.dtype) == dtype_size(b.dtype) && a.rank == b.rank;
  for (int d = 0; identical && d < a.rank; ++d)
    identical = a.shape[d] == b.shape[d] && (a.shape[d] == 1 || a.strides[d] == b.strides[d]);
  return identical ? Overlap::identical : Overlap::partial;
}

void check_no_overlap(const char* op, const char* out_arg, const TensorView& out, const char* in_arg,
                      const TensorView& in, bool in_place_ok) {
  if (!(out.device == in.device)) return;
  switch (overlap(out, in)) {
    case Overlap::none: return;
    case Overlap::identical:
      if (in_place_ok && out.dtype == in.dtype) return;
      throw_invalid_argument(op, out_arg, std::string("aliases '") + in_arg +
                                              "'; this operation cannot run in place with these dtypes");
    case Overlap::partial:
      throw_invalid_argument(op, out_arg, std::string("partially overlaps '") + in_arg +
                                              "'; outputs may alias an input only exactly (in place) or not at all");
  }
}

std::int64_t rows_excluding(const TensorView& v, int dim) {
  std::int64_t rows = 1;
  for (int d = 0; d < v.rank; ++d)
    if (d != dim) rows *= v.shape[d];
  return rows;
}

}  // namespace smk::detail
