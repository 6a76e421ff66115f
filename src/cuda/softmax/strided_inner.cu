// strided_inner: a reduction over a dimension that is not the innermost in memory (outer × n × inner, e.g. softmax
// over dim 1 of [B, n, D]), without a transposing copy. A block is `width` adjacent rows (threads along the inner
// dimension, whose loads coalesce) × `depth` threads along the reduced one. Three passes over the row: the max, a
// compensated sum of exp(z − max) (so a thread's long sequential sum stays exact to a few ulp), and the outputs;
// the partials of the `depth` threads of a row combine through shared memory in a fixed order. When the tile
// (n × width scores in f32) fits in shared memory — the block opts into the whole of Hopper's 227 KB — the passes
// after the first read it from there instead of from global memory.
//
// Traffic per element: cached, 8 B f32 / 4 B bf16 for softmax (read once, write once); uncached, the input is read
// three times (12 B + 4 B f32), though the re-reads of a recent tile mostly hit L2.
// Floor on the H200 at 4.27 TB/s: [64, 1024, 512] f32 over dim 1 (268 MB moved) 62.9 µs.
// Measured: correctness only so far (tests/cuda/softmax); no strided shape is in the benchmark grid yet.
#include "cuda/softmax/common.cuh"
#include "cuda/softmax/launch.hpp"

namespace smk::cuda::kernels {

namespace {

constexpr int kMaxThreads = 512;
constexpr int kMaxDepth = 32;
static_assert(kStridedStaticSmem == static_cast<int>(sizeof(float) + sizeof(long long)) * kMaxThreads,
              "the host's cache decision must leave room for the kernel's static shared memory");

// Neumaier's compensated summation: s + c carries the sum of every term to within an ulp or two of s.
struct CompensatedSum {
  float s = 0, c = 0;
  __device__ __forceinline__ void add(float x) {
    const float t = s + x;
    c += fabsf(s) >= fabsf(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  __device__ __forceinline__ float value() const { return s + c; }
};

// The pairwise sum of a column's `depth` partials (depth a power of two), in the same order in every thread.
__device__ __forceinline__ float column_sum(const float* red, int width, int depth, int x) {
  float a[kMaxDepth];
  for (int k = 0; k < depth; ++k) a[k] = red[k * width + x];
  for (int w = 1; w < depth; w *= 2)
    for (int k = 0; k + w < depth; k += 2 * w) a[k] += a[k + w];
  return a[0];
}

template <typename In>
__global__ void __launch_bounds__(kMaxThreads) strided_inner_kernel(const RowProblem p, bool cache) {
  extern __shared__ float tile[];  // cache ? n × width : nothing
  __shared__ float red[kMaxThreads];
  __shared__ long long red_ties[kMaxThreads];
  const int width = blockDim.x, depth = blockDim.y;
  const int x = threadIdx.x, y = threadIdx.y;
  const std::int64_t n = p.n;
  const std::int64_t tiles = (p.inner + width - 1) / width;
  const std::int64_t total = p.rows * tiles;
  const bool keep_exp = p.op == Op::softmax;
  for (std::int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    const std::int64_t outer = t / tiles;
    const std::int64_t col = (t - outer * tiles) * width + x;
    const bool active = col < p.inner;
    const RowRef o{outer, active ? col : 0};
    const RowTransform tf = row_transform(p, o);
    const In* xrow = at<In>(p.x, o.off(p, kX));
    const std::int64_t step = p.step[kX];
    auto score = [&](std::int64_t j) { return tf.apply(to_f32(xrow[j * step]), j); };

    float m = -detail::inf_<float>();
    if (active) {
      for (std::int64_t j = y; j < n; j += depth) {
        const float z = score(j);
        if (cache) tile[j * width + x] = z;
        m = max_nan(m, z);
      }
    }
    red[y * width + x] = m;
    __syncthreads();
    for (int k = 0; k < depth; ++k) m = max_nan(m, red[k * width + x]);
    const float shift = OnlineSoftmaxState<float>::shift_for(m);
    __syncthreads();  // red is rewritten below

    // The excess d = l − 1 (online_state.hpp): the scores equal to the max are counted, the others' exponentials
    // summed, so the sum never holds the max's 1 and keeps its relative precision.
    CompensatedSum sum;
    long long ties = 0;
    if (active) {
      for (std::int64_t j = y; j < n; j += depth) {
        const float z = cache ? tile[j * width + x] : score(j);
        const float e = keep_exp ? exp_diff(z, shift) : log_term_exp(z, shift);  // common.cuh: why two
        if (cache && keep_exp) tile[j * width + x] = e;
        if (z == shift) ++ties;
        else sum.add(e);
      }
    }
    red[y * width + x] = sum.value();
    red_ties[y * width + x] = ties;
    __syncthreads();
    const float rest = column_sum(red, width, depth, x);
    ties = 0;
    for (int k = 0; k < depth; ++k) ties += red_ties[k * width + x];
    const auto state = OnlineSoftmaxState<float>::from_max_ties_and_rest(m, ties, rest);

    if (active) {
      if (!writes_rows(p.op)) {
        if (y == 0) write_row_stats(p, o, state);
      } else {
        const RowNormalizer<float> norm = state.normalizer(p.empty_rows);
        with_out_type<In>(p, [&](auto* tag) {
          using Out = std::remove_pointer_t<decltype(tag)>;
          Out* orow = at<Out>(p.out, o.off(p, kOut));
          const std::int64_t ostep = p.step[kOut];
          for (std::int64_t j = y; j < n; j += depth) {
            float r;
            if (keep_exp) r = cache ? norm.softmax_from_exp(tile[j * width + x]) : norm.softmax(score(j));
            else r = norm.log_softmax(cache ? tile[j * width + x] : score(j));
            orow[j * ostep] = from_f32<Out>(r);
          }
        });
      }
    }
    __syncthreads();  // red is rewritten by the next tile
  }
}

template <typename In>
void launch(const RowProblem& p, StridedConfig c, cudaStream_t s) {
  const auto kernel = strided_inner_kernel<In>;
  const std::size_t smem = c.cache ? sizeof(float) * static_cast<std::size_t>(p.n) * c.width : 0;
  if (smem > 48 * 1024) {
    static DeviceOnce optin;  // opt into the whole of Hopper's shared memory, once per device
    optin.run([&] {
      SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          device_facts().max_smem_optin - kStridedStaticSmem));
    });
  }
  const int threads = c.width * c.depth;
  const std::int64_t tiles = p.rows * ((p.inner + c.width - 1) / c.width);
  const unsigned grid = persistent_grid(kernel, threads, smem, tiles);
  kernel<<<grid, dim3(c.width, c.depth), smem, s>>>(p, c.cache);
  SMK_CUDA_CHECK_LAUNCH("strided_inner_kernel");
}

}  // namespace

void launch_strided_inner(const RowProblem& p, StridedConfig c, cudaStream_t s) {
  if (p.rows == 0 || p.inner == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) { launch<std::remove_pointer_t<decltype(tag)>>(p, c, s); });
}

}  // namespace smk::cuda::kernels
