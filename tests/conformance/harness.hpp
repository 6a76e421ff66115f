// softmaxkit conformance: one harness that runs a softmax-family problem on any backend — the CPU reference, the
// CPU float path, the public dispatch on the CPU, and (CUDA builds) every GPU kernel path forced one by one — and
// checks the result against the contract of docs/semantics.md.
//
// A problem owns host buffers laid out exactly as the caller's tensors would be: strides, offsets, unaligned starts
// and padding included. Input padding holds NaN, so a kernel that reads outside its view poisons its own result;
// the output buffer is poisoned before every run (two different poisons, one NaN and one finite), so an element
// left unwritten or a write outside the view is caught. A GPU run copies the same bytes to the device and back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "conformance/numerics.hpp"
#include "softmaxkit/cuda/softmax_path.hpp"
#include "softmaxkit/softmax.hpp"

namespace smk::conformance {

enum class Op { softmax, log_softmax, logsumexp };
const char* op_name(Op op);
inline constexpr Op kAllOps[] = {Op::softmax, Op::log_softmax, Op::logsumexp};

// ---- problems ---------------------------------------------------------------------------------------------------

// How a test describes a case: the logical tensor (shape, row-major values) and how it is laid out in memory.
struct Spec {
  std::string name;
  DType dtype = DType::f32;
  DType out_dtype = DType::f32;  // softmax / log-softmax output dtype: in's, or f32 for 16-bit inputs
  std::vector<std::int64_t> shape;
  int dim = -1;
  std::vector<double> values;    // row-major over `shape`; rounded once to `dtype` when stored
  std::vector<std::int64_t> in_strides;   // empty: contiguous
  std::int64_t in_offset = 0;             // elements from the buffer start (1 makes a 16-byte vector unaligned)
  std::vector<std::int64_t> out_strides;  // softmax / log-softmax only; empty: contiguous
  std::int64_t out_offset = 0;
  bool in_place = false;          // softmax / log-softmax: out is the input view itself
  bool null_data = false;         // an empty tensor passed with null pointers
  SoftmaxOptions options{};       // dim comes from `dim`; mask and temperature_per_row from the fields below
  // Optional mask: a shape that broadcasts to `shape` (each size equal or 1), row-major values, dtype f32 / in's
  // (additive) or b8 (non-zero keeps a position).
  std::vector<std::int64_t> mask_shape;
  std::vector<double> mask_values;
  DType mask_dtype = DType::f32;
  // Optional per-row temperatures, one per row (rows in row-major order of every dimension but `dim`).
  std::vector<float> temperatures;
};
// A Spec with out_dtype = dtype.
Spec spec(std::string name, DType dtype, std::vector<std::int64_t> shape, std::vector<double> values);

struct ViewLayout {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape, strides;
  std::int64_t offset = 0;
};
// One past the highest element offset a layout addresses, from the buffer's start (its offset when it is empty); a
// negative stride counts as 0, so a layout made invalid on purpose still gets a buffer that holds its start.
std::int64_t extent(const ViewLayout& v);
// "[2, 3, 4]": a shape or strides for a message.
std::string dims(const std::vector<std::int64_t>& v);
// The view of a layout over a buffer starting at `base` (null data when `null_data`).
TensorView make_view(const ViewLayout& v, unsigned char* base, bool null_data, Device device = Device::cpu());

// A Spec made concrete for one op: buffers and views.
struct Problem {
  std::string name;
  Op op = Op::softmax;
  int dim = 0;
  ViewLayout in, out;
  std::vector<unsigned char> in_bytes;  // the input buffer, padding = NaN
  std::size_t out_buffer_bytes = 0;     // the output buffer (unused when in place)
  bool in_place = false;
  bool null_data = false;
  SoftmaxOptions options{};  // options.mask / temperature_per_row are set from the layouts below by run()
  bool has_mask = false;
  ViewLayout mask;
  std::vector<unsigned char> mask_bytes;
  bool has_temperatures = false;
  ViewLayout temps;
  std::vector<unsigned char> temp_bytes;
};
Problem make_problem(const Spec& s, Op op);

// ---- backends ---------------------------------------------------------------------------------------------------

enum class BackendKind { cpu_reference, cpu_float, cpu_dispatch, gpu };
struct Backend {
  std::string name;
  BackendKind kind = BackendKind::cpu_dispatch;
  cuda::SoftmaxPath path = cuda::SoftmaxPath::automatic;  // GPU: the forced kernel path
  SumModel sum_model = SumModel::tree;                     // which summation-depth allowance its gate uses
  bool is_gpu() const { return kind == BackendKind::gpu; }
};
// GoogleTest prints a backend parameter by its name (found by argument-dependent lookup).
inline void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }
std::vector<Backend> cpu_backends();
std::vector<Backend> gpu_backends();  // empty in a CPU-only build; one per smk::cuda::softmax_paths() entry
// Empty when the backend can run here; otherwise why not (no GPU).
std::string backend_unavailable_reason(const Backend& b);

struct RunResult {
  bool applicable = true;  // false: the backend (a forced path) refused the case with Error(unsupported)
  std::string reason;
  std::vector<unsigned char> in_bytes;   // the input buffer after the call (the output too, when in place)
  std::vector<unsigned char> out_bytes;  // the output buffer after the call
};
// Runs the problem with the output buffer first filled with `poison` bytes. smk::Error(unsupported) from a forced
// GPU path becomes applicable = false; every other exception propagates.
RunResult run(const Backend& b, const Problem& p, unsigned char poison);

// ---- the contract -----------------------------------------------------------------------------------------------

struct Verdict {
  std::int64_t elements = 0;  // outputs judged
  std::int64_t failures = 0;
  std::vector<std::string> messages;  // the first few failures, each naming row, position, got and expected
  double worst_gate_fraction = 0;     // max over finite outputs of error / gate (≤ 1 passes)
  bool ok() const { return failures == 0; }
  std::string summary() const;
};
// Checks one run: untouched bytes outside the output view, an unchanged input, every row's regime and the accuracy
// gates of docs/semantics.md against the long-double oracle.
Verdict check(const Problem& p, const RunResult& r, const Backend& b, unsigned char poison);

// For a second run of the same problem with another poison: the bytes outside the output view hold that poison
// (or, in place, the input's bytes) and every output element is bitwise the first run's. Together with a full
// check() of the first run, this proves every element was written, whatever the poison.
Verdict check_same_outputs(const Problem& p, const RunResult& first, const RunResult& second, unsigned char poison);

// The scores the contract applies to for row `row`: x / T (+ mask, or −inf where a b8 mask removes), exact in
// long double (the stored inputs, the temperature and the mask are exact). `roundings` is how many times a path
// rounds each score before the algorithm proper (the division by T, the mask addition): the gates grow by that.
// With `f32_compute`, a scaled or masked score beyond the f32 range becomes ±inf, as it does in every path that
// computes in f32 (a tiny T, or a huge x plus a huge mask: docs/semantics.md §3); the float64 reference keeps it
// finite.
std::vector<long double> row_scores(const Problem& p, std::int64_t row, int* roundings = nullptr,
                                    bool f32_compute = true);

// The stored input values of row `row` (rows enumerate every index but `dim`, row-major), exact.
std::int64_t row_count(const Problem& p);
std::vector<double> row_values(const Problem& p, std::int64_t row);
// The output of row `row` as read from a run (for softmax / log-softmax: n values; logsumexp: 1).
std::vector<double> row_output(const Problem& p, const RunResult& r, std::int64_t row);

}  // namespace smk::conformance
