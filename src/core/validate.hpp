// softmaxkit (internal): argument checks shared by every public entry point. Each throws smk::Error naming the
// operation and the argument, and none of them touches tensor data, so a rejected call writes nothing.
#pragma once

#include <cstdint>

#include "softmaxkit/core/tensor.hpp"

namespace smk::detail {

// Structural checks on one view: rank in [0, kMaxRank], sizes ≥ 0, strides ≥ 0, a known dtype, a non-null pointer
// unless the view is empty, and an element count and byte extent that fit in 63 bits.
void check_view(const char* op, const char* arg, const TensorView& v);

// Checks `dim` against `rank` (negative counts from the end) and returns it in [0, rank).
int normalize_dim(const char* op, const char* arg, int dim, int rank);

void check_same_shape(const char* op, const char* arg, const TensorView& v, const char* ref_arg, const TensorView& ref);
// `v` has exactly this shape (rank and sizes).
void check_shape(const char* op, const char* arg, const TensorView& v, std::initializer_list<std::int64_t> shape);
void check_same_device(const char* op, const char* arg, const TensorView& v, const char* ref_arg, const TensorView& ref);
void check_dtype_in(const char* op, const char* arg, const TensorView& v, std::initializer_list<DType> allowed);

// An output must not write any element twice: no zero stride on a dimension of size > 1, and no two dimensions
// whose strides interleave. (This is the usual "non-overlapping and dense-or-strided" test.)
void check_writable(const char* op, const char* arg, const TensorView& v);

enum class Overlap { none, identical, partial };
// Compares the byte ranges [lowest, highest] that two views address. `identical` means the same pointer, dtype
// size, shape and strides (an in-place call); `partial` means the ranges intersect in any other way.
Overlap overlap(const TensorView& a, const TensorView& b);

// Rejects an output that partially overlaps an input. When `in_place_ok`, an output identical to the input is
// allowed (the op reads each element before writing it); otherwise that is rejected too.
void check_no_overlap(const char* op, const char* out_arg, const TensorView& out, const char* in_arg,
                      const TensorView& in, bool in_place_ok);

// Size of every dimension but `dim`, multiplied: the number of independent rows a reduction over `dim` sees.
std::int64_t rows_excluding(const TensorView& v, int dim);

}  // namespace smk::detail
