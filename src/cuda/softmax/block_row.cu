// block_per_row and cluster_row: a row held in registers across one block (up to 512 threads × 24 elements =
// 12288) or across a thread-block cluster of up to 16 blocks on 16 SMs (196608 elements), so it is read once and
// written once. The blocks of a cluster exchange their partial max, then their partial sums, through distributed
// shared memory; every block combines the partials in the same fixed order, so all hold the same row state.
//
// Traffic per element: softmax / log-softmax 8 B (f32), 4 B (bf16); logsumexp / state 4 B / 2 B.
// Floor on the H200 at 4.27 TB/s: 4096×151936 f32 (4.98 GB) 1166 µs; 8192×32000 f32 492 µs; 16384×4096 f32 126 µs;
// 4096×16384 f32 126 µs; 32×128256 f32 (32.8 MB) 7.7 µs; 1×151936 f32 (1.2 MB) 0.28 µs (latency-bound).
// Measured (H200, 2026-11-29, docs/perf-notebook.md "Issue 3 kernels"): block_per_row 16384×4096 softmax f32
// 138 µs (91% of copy), bf16 128 µs (49%); cluster_row 8192×32000 f32 764 µs (64%), bf16 622 µs (40%);
// 4096×16384 f32 209 µs (60%). At 4096×151936 cluster_row moved only 1.89 TB/s (44%) against split_row's 2.36,
// so the dispatcher sends rows above 65536 to split_row; one 1×151936 row took 13.2 µs here (split_row: 16.6).
// Log-softmax / logsumexp count the max's ties for the excess state and form log l's terms with log_term_exp
// (common.cuh); the op class is a template parameter. Measured (H200, 2026-11-30, commit 050be25, docs/perf-notebook.md
// "log l's terms"): 16384×4096 f32 softmax 141 µs (89 % of copy), log-softmax 143 (88 %), logsumexp 103 (61 % of
// read); bf16 128 / 133 / 106; 8192×32000 f32 849 / 795 / 573, bf16 626 / 648 / 548.
#include <cooperative_groups.h>

#include "cuda/softmax/common.cuh"
#include "cuda/softmax/launch.hpp"

namespace smk::cuda::kernels {

namespace {

namespace cg = cooperative_groups;
constexpr int kMaxThreads = 512;  // 2 blocks of ≤ 64 registers per thread fit an SM: one loads while one reduces

// The cluster-wide combination of one float per block (`slot` in each block's shared memory), in rank order:
// lane r of every warp reads block r's value, then a butterfly over the warp. Called by every thread.
__device__ __forceinline__ float cluster_max(float* slot, int cluster) {
  const int lane = threadIdx.x % 32;
  const float v = lane < cluster ? *cg::this_cluster().map_shared_rank(slot, lane) : -detail::inf_<float>();
  return group_max(v, 32);
}
__device__ __forceinline__ float cluster_sum(float* slot, int cluster) {
  const int lane = threadIdx.x % 32;
  const float v = lane < cluster ? *cg::this_cluster().map_shared_rank(slot, lane) : 0.0f;
  return group_sum(v, 32);
}

__device__ __forceinline__ int cluster_count(int* slot, int cluster) {
  const int lane = threadIdx.x % 32;
  const int v = lane < cluster ? *cg::this_cluster().map_shared_rank(slot, lane) : 0;
  return group_count(v, 32);
}

// kLog: log-softmax, logsumexp or the state (log l) rather than softmax (1/l); a template parameter for the reason
// warp_row.cu gives.
template <typename In, bool kLog>
__global__ void __launch_bounds__(kMaxThreads, 2) block_rows_kernel(const RowProblem p, int cluster) {
  using Tile = RowTile<In, kBlockElems>;
  __shared__ float red_max[32], red_sum[32];
  __shared__ int red_ties[32];
  __shared__ float part_max, part_sum;  // this block's partials, read by the whole cluster
  __shared__ int part_ties;
  const int rank = cluster > 1 ? static_cast<int>(cg::this_cluster().block_rank()) : 0;
  const int T = static_cast<int>(blockDim.x);
  const int g = rank * T + static_cast<int>(threadIdx.x), G = cluster * T;
  const std::int64_t first = blockIdx.x / cluster, stride = gridDim.x / cluster;
  for (std::int64_t row = first; row < p.rows; row += stride) {
    const RowRef o{row, 0};
    float v[kBlockElems];
    Tile::load(v, at<In>(p.x, o.off(p, kX)), p.n, p.step[kX], g, G);
    Tile::transform(v, row_transform(p, o), p.n, g, G);

    float m = block_max(tree_max<kBlockElems>(v), red_max);
    if (cluster > 1) {
      if (threadIdx.x == 0) part_max = m;
      cg::this_cluster().sync();
      m = cluster_max(&part_max, cluster);
    }
    const float shift = OnlineSoftmaxState<float>::shift_for(m);
    constexpr bool count_ties = kLog;
    int ties = 0;
    float rest = thread_exp_rest(v, shift, !count_ties, count_ties, ties);
    rest = block_sum(rest, red_sum);
    if (count_ties) ties = block_count(ties, red_ties);  // red_ties is reused like red_sum (below)
    if (cluster > 1) {
      if (threadIdx.x == 0) {
        part_sum = rest;
        part_ties = ties;
      }
      cg::this_cluster().sync();
      rest = cluster_sum(&part_sum, cluster);
      if (count_ties) ties = cluster_count(&part_ties, cluster);
    }
    // Shared memory reuse: red_max is rewritten next row only after this row's block_sum barrier, red_sum and
    // red_ties after the next row's block_max barrier; part_* only after the next cluster barrier.
    const auto state = state_from(m, ties, rest, count_ties);
    if (!writes_rows(p.op)) {
      if (g == 0) write_row_stats(p, o, state);
      continue;
    }
    finish_rows(v, state.normalizer(p.empty_rows), kLog ? Op::log_softmax : Op::softmax);
    with_out_type<In>(p, [&](auto* tag) {
      using Out = std::remove_pointer_t<decltype(tag)>;
      Tile::template store<Out>(at<Out>(p.out, o.off(p, kOut)), v, p.n, p.step[kOut], g, G);
    });
  }
  // A block's shared memory must outlive every remote read of it.
  if (cluster > 1) cg::this_cluster().sync();
}

template <typename In>
void launch(const RowProblem& p, BlockConfig c, cudaStream_t s) {
  const auto kernel = p.op == Op::softmax ? block_rows_kernel<In, false> : block_rows_kernel<In, true>;
  const unsigned grid = capped_grid(p.rows, c.cluster);
  if (c.cluster == 1) {
    kernel<<<grid, c.threads, 0, s>>>(p, 1);
    SMK_CUDA_CHECK_LAUNCH("block_rows_kernel");
    return;
  }
  static DeviceOnce non_portable;  // clusters of more than 8 blocks are an H100/H200 extension
  non_portable.run([] {  // both instantiations at once: one DeviceOnce per In serves either op
    for (const auto k : {block_rows_kernel<In, false>, block_rows_kernel<In, true>})
      SMK_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  });
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(c.threads);
  cfg.stream = s;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(c.cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, p, c.cluster));
}

}  // namespace

void launch_block_rows(const RowProblem& p, BlockConfig c, cudaStream_t s) {
  if (p.rows == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) { launch<std::remove_pointer_t<decltype(tag)>>(p, c, s); });
}

}  // namespace smk::cuda::kernels
