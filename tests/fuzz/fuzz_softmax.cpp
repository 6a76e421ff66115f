// libFuzzer target: drives the CPU softmax family through its public API (and the CPU float path) with random
// shapes, strides, offsets, dtypes, temperatures, masks and values (±inf, NaN, huge, tiny), and holds every call to the contract
// of docs/semantics.md:
//   - a valid call returns normally and its output passes the conformance checker (regimes, accuracy gates, no
//     write outside the output view, input untouched) — tests/conformance/harness.hpp;
//   - a call made invalid on purpose (one defect injected: negative stride, wrong dtype, shape, dim, policy,
//     temperature, null data, self-overlapping or partially aliasing output) throws smk::Error(invalid_argument)
//     whose message names the op and the argument at fault, and writes nothing;
//   - nothing crashes, and no other exception escapes.
// A violation prints the case and aborts, so libFuzzer keeps the input (keep it in tests/fuzz/corpus/ as a
// regression case; the replay test runs that folder in every build).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "conformance/harness.hpp"
#include "reader.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/softmax.hpp"

using namespace smk;
using namespace smk::conformance;

namespace {

using smk::fuzz::Reader;

constexpr double kInf = std::numeric_limits<double>::infinity();

double value(Reader& r) {
  static const double palette[] = {0,     -0.0,   1,     -1,     kInf,  -kInf, std::nan(""), 1e10,  -1e10, 1e-10,
                                   88.72, -103.9, 65504, -65504, 1000,  1,     -999,         1e7,   133120, 1e38,
                                   -1e38, 1e-40,  3.5,   -40,    0.25,  -87};
  switch (r.below(4)) {
    case 0: return palette[r.below(sizeof palette / sizeof palette[0])];
    case 1: return static_cast<double>(r.f32());                        // any float bit pattern
    default: return (static_cast<double>(r.below(2001)) - 1000) / 37;  // ordinary logits
  }
}

[[noreturn]] void violation(const std::string& what, const Problem& p) {
  std::fprintf(stderr,
               "CONTRACT VIOLATION: %s\n  op %s, dim %d, temperature %g\n  in %s shape %s strides %s offset %lld\n"
               "  out %s shape %s strides %s offset %lld%s\n",
               what.c_str(), op_name(p.op), p.dim, p.options.temperature, dtype_name(p.in.dtype), dims(p.in.shape).c_str(),
               dims(p.in.strides).c_str(), static_cast<long long>(p.in.offset), dtype_name(p.out.dtype),
               dims(p.out.shape).c_str(), dims(p.out.strides).c_str(), static_cast<long long>(p.out.offset),
               p.in_place ? " (in place)" : "");
  std::abort();
}

// Outcome counts, printed at exit when SMK_FUZZ_STATS is set (to see that both valid and invalid calls are reached).
struct Stats {
  long valid = 0, rejected = 0, elements = 0;
  ~Stats() {
    if (std::getenv("SMK_FUZZ_STATS"))
      std::fprintf(stderr, "fuzz_softmax: %ld valid calls (%ld outputs checked), %ld invalid calls rejected\n", valid,
                   elements, rejected);
  }
} stats;

enum class Defect { none, neg_stride, bad_in_dtype, out_shape, dim_range, bad_out_dtype, out_self_overlap,
                    partial_alias, bad_policy, bad_temperature, null_in, count };

struct Layout {
  std::vector<std::int64_t> shape, strides;
};

// A non-overlapping layout of `shape`: dimensions stored in a random order, each with random padding.
std::vector<std::int64_t> random_strides(Reader& r, const std::vector<std::int64_t>& shape) {
  const int rank = static_cast<int>(shape.size());
  std::vector<int> order(rank);
  for (int d = 0; d < rank; ++d) order[d] = d;
  for (int d = rank - 1; d > 0; --d) std::swap(order[d], order[r.below(d + 1)]);
  if (!r.chance(3)) {  // usually row-major
    for (int d = 0; d < rank; ++d) order[d] = rank - 1 - d;
  }
  std::vector<std::int64_t> strides(rank);
  std::int64_t step = 1 + (r.chance(4) ? r.below(3) : 0);  // innermost stride 1, sometimes 2 or 3
  for (int k = 0; k < rank; ++k) {
    const int d = order[k];
    strides[d] = step;
    step = step * std::max<std::int64_t>(shape[d], 1) + (r.chance(4) ? r.below(5) : 0);
  }
  return strides;
}

// The call under test, on the public dispatch or the CPU float path.
void call(bool float_path, Op op, const TensorView& out, const TensorView& in, const SoftmaxOptions& o) {
  if (float_path) {
    if (op == Op::softmax) cpu::softmax(out, in, o);
    else if (op == Op::log_softmax) cpu::log_softmax(out, in, o);
    else cpu::logsumexp(out, in, o);
  } else {
    if (op == Op::softmax) smk::softmax(out, in, o);
    else if (op == Op::log_softmax) smk::log_softmax(out, in, o);
    else smk::logsumexp(out, in, o);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r(data, size);
  const Op op = kAllOps[r.below(3)];
  const bool float_path = r.chance(2);
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64};
  const DType in_dtype = dtypes[r.below(4)];
  const int rank = 1 + static_cast<int>(r.below(4));
  std::vector<std::int64_t> shape(rank);
  // At most 4096 elements, and at most 4096 rows when a dimension is 0: the cap counts an empty dimension as 1, or a
  // logsumexp over an empty dimension of a 0 x 253 x 253 x 253 shape writes 16M outputs (the CI fuzz timeout of
  // tests/fuzz/corpus/43cbcd5d…, a 2026-11-30 CI failure).
  std::int64_t cap = 1, numel = 1;
  for (int d = 0; d < rank; ++d) {
    shape[d] = r.chance(8) ? 0 : 1 + r.below(r.chance(4) ? 300 : 9);
    if (cap * std::max<std::int64_t>(shape[d], 1) > 4096) shape[d] = 1;
    cap *= std::max<std::int64_t>(shape[d], 1);
    numel *= shape[d];
  }
  const int dim = static_cast<int>(r.below(rank));
  Defect defect = r.chance(4) ? static_cast<Defect>(1 + r.below(static_cast<int>(Defect::count) - 1)) : Defect::none;

  Problem p;
  p.op = op;
  p.dim = dim;
  p.in = {in_dtype, shape, random_strides(r, shape), r.below(4)};
  if (r.chance(6) && rank > 1) {  // a broadcast input: stride 0 on a non-reduced dimension
    const int d = static_cast<int>(r.below(rank));
    if (d != dim) p.in.strides[d] = 0;
  }
  p.options.dim = r.chance(2) ? dim : dim - rank;
  p.options.empty_rows = r.chance(2) ? EmptyRowPolicy::nan : EmptyRowPolicy::zeros;

  const bool sixteen = in_dtype == DType::f16 || in_dtype == DType::bf16;
  if (op == Op::logsumexp) {
    std::vector<std::int64_t> out_shape;
    for (int d = 0; d < rank; ++d)
      if (d != dim) out_shape.push_back(shape[d]);
    p.out = {in_dtype == DType::f64 ? DType::f64 : DType::f32, out_shape, random_strides(r, out_shape), r.below(4)};
  } else {
    p.in_place = !sixteen && r.chance(5);  // (16-bit in place also works; the f32-output choice below needs a copy)
    const DType out_dtype = sixteen && r.chance(2) ? DType::f32 : in_dtype;
    p.out = p.in_place ? p.in : ViewLayout{out_dtype, shape, random_strides(r, shape), r.below(4)};
    if (p.in_place && rank > 1) {
      for (auto s : p.in.strides)
        if (s == 0) p.in_place = false;  // a broadcast input cannot be written in place
      if (!p.in_place) p.out = {in_dtype, shape, random_strides(r, shape), 0};
    }
  }

  // Inject the defect, where it applies to this case; the message must name `arg`.
  const char* arg = nullptr;
  auto numel_of = [](const ViewLayout& v) {
    std::int64_t k = 1;
    for (auto s : v.shape) k *= s;
    return k;
  };
  switch (defect) {
    case Defect::neg_stride: p.in.strides[r.below(rank)] = -1; arg = "'in'"; break;
    case Defect::bad_in_dtype: p.in.dtype = r.chance(2) ? DType::i32 : DType::b8; arg = "'in'"; break;
    case Defect::out_shape:
      if (p.in_place) break;
      p.out.shape.push_back(2);  // one dimension too many
      p.out.strides.push_back(1);
      for (auto& s : p.out.strides) s *= 2;
      p.out.strides.back() = 1;
      arg = "'out'";
      break;
    case Defect::dim_range: p.options.dim = r.chance(2) ? rank : -rank - 1; arg = "'options.dim'"; break;
    case Defect::bad_out_dtype:
      if (p.in_place) break;
      p.out.dtype = in_dtype == DType::f64 ? DType::f32 : (in_dtype == DType::f32 ? DType::f16 : DType::f64);
      arg = "'out'";
      break;
    case Defect::out_self_overlap:
      if (p.in_place || numel_of(p.out) == 0) break;  // an empty output writes nothing, so it cannot overlap itself
      for (std::size_t d = 0; d < p.out.shape.size(); ++d)
        if (p.out.shape[d] > 1) {
          p.out.strides[d] = 0;
          arg = "'out'";
          break;
        }
      break;
    case Defect::partial_alias:
      if (op == Op::logsumexp || p.in_place || numel < 2) break;
      for (auto s : p.in.strides)
        if (s == 0) goto no_alias;  // keep the input's layout simple enough to be sure of the overlap
      p.out = p.in;
      p.out.dtype = in_dtype;
      p.out.offset = p.in.offset + 1;
      arg = "'out'";
    no_alias:
      break;
    case Defect::bad_policy: p.options.empty_rows = static_cast<EmptyRowPolicy>(2 + r.below(200)); arg = "'options.empty_rows'"; break;
    case Defect::bad_temperature: {
      const float bad[] = {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::nanf(""), -0.0f};
      p.options.temperature = bad[r.below(5)];
      arg = "'options.temperature'";
      break;
    }
    case Defect::null_in:
      if (numel == 0) break;
      arg = "'in'";
      break;
    default: break;
  }
  if (!arg) defect = Defect::none;

  // Buffers: input padding NaN, output poisoned; the partial alias writes into the input buffer.
  const bool alias_in_buffer = p.in_place || defect == Defect::partial_alias;
  const auto in_size = static_cast<std::int64_t>(dtype_size(p.in.dtype));
  const std::int64_t in_elems = extent(p.in) + 4 + (alias_in_buffer ? extent(p.out) : 0);
  p.in_bytes.assign(static_cast<std::size_t>(in_elems * in_size), 0xFF);
  if (defect != Defect::bad_in_dtype && defect != Defect::neg_stride) {
    for (std::int64_t i = 0; i < numel; ++i) {
      std::int64_t off = p.in.offset, rest = i;
      for (int d = rank - 1; d >= 0; --d) {
        off += (rest % shape[d]) * p.in.strides[d];
        rest /= shape[d];
      }
      store(p.in.dtype, p.in_bytes.data() + off * in_size, value(r));
    }
  }
  // A valid temperature now and then (read last, so that older corpus inputs decode to the same cases as before).
  if (defect != Defect::bad_temperature) {
    const float temps[] = {1.0f, 0.5f, 3.0f, 1e-3f, 1e3f, 1e-30f};
    const std::uint32_t k = r.below(16);
    if (k < 6) p.options.temperature = temps[k];
  }
  // A valid mask now and then, broadcast over random dimensions: additive (f32, or in's dtype) or boolean.
  if (r.chance(5) && defect != Defect::bad_in_dtype && in_dtype != DType::f64) {
    p.has_mask = true;
    std::vector<std::int64_t> mshape(rank), mstrides(rank);
    for (int d = 0; d < rank; ++d) mshape[d] = r.chance(2) ? shape[d] : 1;
    std::int64_t count = 1;
    for (int d = rank - 1; d >= 0; --d) {
      mstrides[d] = count;
      count *= std::max<std::int64_t>(mshape[d], 1);
    }
    const DType mt = r.chance(3) ? DType::b8 : (sixteen && r.chance(2) ? in_dtype : DType::f32);
    p.mask = {mt, mshape, mstrides, 0};
    const auto msize = static_cast<std::int64_t>(dtype_size(mt));
    p.mask_bytes.assign(static_cast<std::size_t>(count * msize), 0);
    for (std::int64_t i = 0; i < count; ++i) {
      if (mt == DType::b8) p.mask_bytes[i] = r.chance(4) ? 0 : 1;
      else store(mt, p.mask_bytes.data() + i * msize, r.chance(3) ? -kInf : value(r));
    }
  }
  p.out_buffer_bytes = alias_in_buffer ? 0 : static_cast<std::size_t>((extent(p.out) + 4) * static_cast<std::int64_t>(dtype_size(p.out.dtype)));
  const unsigned char poison = r.chance(2) ? 0xFF : 0x55;

  RunResult res;
  res.in_bytes = p.in_bytes;
  res.out_bytes.assign(p.out_buffer_bytes, poison);
  const TensorView in = make_view(p.in, res.in_bytes.data(), defect == Defect::null_in);
  const TensorView out = alias_in_buffer ? make_view(p.out, res.in_bytes.data(), false)
                                         : make_view(p.out, res.out_bytes.data(), false);
  SoftmaxOptions options = p.options;
  std::vector<unsigned char> mask = p.mask_bytes;
  if (p.has_mask) options.mask = make_view(p.mask, mask.data(), false);
  try {
    call(float_path, op, out, in, options);
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (defect == Defect::none) violation("a valid call threw: " + msg, p);
    if (e.code() != ErrorCode::invalid_argument) violation("wrong error code for an invalid call: " + msg, p);
    if (msg.find(arg) == std::string::npos) violation(std::string("the message does not name ") + arg + ": " + msg, p);
    if (msg.find(op_name(op)) == std::string::npos) violation("the message does not name the op: " + msg, p);
    if (res.in_bytes != p.in_bytes || mask != p.mask_bytes) violation("a rejected call wrote into an input: " + msg, p);
    for (unsigned char b : res.out_bytes)
      if (b != poison) violation("a rejected call wrote its output: " + msg, p);
    ++stats.rejected;
    return 0;
  } catch (const std::exception& e) {
    violation(std::string("a non-smk exception escaped: ") + e.what(), p);
  }
  if (defect != Defect::none) violation(std::string("an invalid call was accepted (expected an error naming ") + arg + ")", p);
  if (mask != p.mask_bytes) violation("the mask was written", p);

  // A valid call: hold its output to the contract. The oracle needs the original input, which p.in_bytes keeps.
  Backend b;
  b.kind = float_path ? BackendKind::cpu_float : BackendKind::cpu_dispatch;
  const Verdict v = check(p, res, b, poison);
  if (!v.ok()) violation(v.summary(), p);
  ++stats.valid;
  stats.elements += v.elements;
  return 0;
}
