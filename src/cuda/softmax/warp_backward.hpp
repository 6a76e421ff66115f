// softmaxkit (internal, host side; sbwd11, session 11): the f32 dense form of the warp_per_row backward
// (backward.cu backward_warp_dense_kernel) and how a launch asks for it. Its own header so that kernels.hpp (shared by
// every softmax kernel file) carries none of it.
//
// The dense kernel serves f32 rows that are dense for the launch's lanes and elements (n = lanes · E, one row
// dimension, unit steps, 16-byte aligned base pointers and row strides, dx in f32, no temperature, no mask): the lane's
// addressing is row · stride plus whole 16-byte vectors, so the kernel needs fewer registers than backward_warp_kernel
// (whose general addressing, scalar tails and run-time output type cost ~20 of them) and can run more blocks an SM.
// Its arithmetic is backward_warp_kernel's in the same order (thread_terms' terms, tree_sum, group_sum,
// backward_grads): the same bits. Anything else takes backward_warp_kernel.
#pragma once

#include <atomic>
#include <cstdint>

#include "cuda/softmax/kernels.hpp"
#include "cuda/softmax/packed_rule.hpp"

namespace smk::cuda::kernels {

// Which dense kernel a launch takes (0 in `blocks`: backward_warp_kernel).
//   blocks: __launch_bounds__'s blocks an SM (256 threads), a built bound for the launch's E (backward_dense_built),
//           or 0 for none (the general kernel).
// Plain loads: evict-first loads were timed (0.87-0.95×, docs/perf-notebook.md "sbwd11") and not kept; but the E32
// build reads evict-last (bwd21, BackwardHintTuning below). Stores: plain, but streaming (st.global.cs) in the E8 build
// (sbwd12).
struct WarpBackwardDense {
  int blocks = 0;
};
// Tests and timing: when `on`, replaces the dispatcher's WarpBackwardDense on every f32 warp_per_row backward launch.
struct WarpBackwardDenseTuning {
  bool on = false;
  WarpBackwardDense dense{};
};
WarpBackwardDenseTuning& warp_backward_dense_tuning();
// The last f32 warp_per_row backward launch's dense kernel (blocks 0: it took backward_warp_kernel). Tests.
struct WarpBackwardDenseLast {
  std::atomic<int> blocks{0};
};
WarpBackwardDenseLast& warp_backward_dense_last();

// The dense kernel's builds (backward.cu dense_kernel): E8 at 4 blocks an SM with streaming stores (sbwd12), E16 at 4
// and E32 at 2 with plain stores. (The run of 90f1614 timed E8 at 4 / 6 / 8, E16 at 3 / 5, E32 at 3 and the cache hints
// as well; the run of 69c6ce5 E8 at 4 plain and E16 / E32 with streaming stores: none of those is built.) Asked for
// anything else, a launch takes backward_warp_kernel.
constexpr bool backward_dense_built(int elems, int blocks) {
  return (elems == 8 && blocks == 4) || (elems == 16 && blocks == 4) || (elems == 32 && blocks == 2);
}

// pack14 (session 14), for tests and timing: shared_blocks asks the dy-shared block (BlockConfig::dy_shared) for its
// packed form at that many blocks an SM (backward.cu backward_shared_packed_kernel: 3 built; 0 none, -1 the
// dispatcher's kBackwardSharedPackedBlocks, 3), which serves dense 16-bit rows of up to 512 threads and falls back to
// the unpacked kernel (the same bits) elsewhere; a count not built takes the unpacked kernel. Process-wide, not
// synchronised. (The packed warp kernel's E16 build at 8 blocks an SM, selectable here in 600c491, ran 0.88-0.97× of
// the builds the dispatcher took and was removed.)
struct BackwardPackedTuning {
  int shared_blocks = -1;
};
BackwardPackedTuning& backward_packed_tuning();
// The last dy-shared launch's packed form (blocks an SM; 0: the unpacked kernel). Tests.
struct BackwardPackedLast {
  std::atomic<int> shared_blocks{0};
};
BackwardPackedLast& backward_packed_last();

// bwd16 (session 16), for tests and timing: split_row's common-call elementwise pass (backward.cu
// backward_elementwise_plain_kernel) in softmax backward calls with dx by plain stores (streaming 0) or streaming
// stores (1: st.global.cs, the same values to the same addresses), or as the dispatcher chooses (-1: calls of
// kBackwardSplitCsMinElems … kBackwardSplitCsMaxElems elements streaming). Log-softmax backward is plain whatever the
// switch. Process-wide, not synchronised. (15182b6 also had load hints, a vector form of the pass and other chunk-sums
// bounds under this switch: backward.cu's note above kBackwardSplitCsMinElems; bwd17 brought back the vector form and
// the sums at 3 blocks, below.)
// bwd17 (session 17), the same bits in every choice: sums_blocks builds the common call's chunk-sums kernel
// (backward.cu backward_chunk_sums_plain_kernel) for that many blocks an SM (2 or 3; anything else: the dispatcher's,
// 3 for 16-bit rows and 2 for f32, kBackwardSplitSumsBlocks16 / F32; the same code, only its register bound);
// grads_form picks the common call's elementwise pass where dx is stored streaming (softmax backward) and the rows are
// whole 16-byte vectors: 1 the vector kernel (backward_elementwise_vec_kernel, one 16-byte vector a thread), 0 the
// chunk kernel, -1 the dispatcher's (the vector kernel for 16-bit rows, kBackwardSplitVec16). (80f0911 also built the
// vector kernel with plain stores, 0.57x, and the sums at 4 blocks; removed.)
struct BackwardSplitTuning {
  int streaming = -1;
  int sums_blocks = 0;
  int grads_form = -1;
};
BackwardSplitTuning& backward_split_tuning();
// The last split_row backward launch's dx stores in the common call's elementwise pass (1 streaming, 0 plain or not the
// common call's kernel), its elementwise form (1 the vector kernel, 0 another) and its chunk-sums kernel's blocks an SM
// (0: not the common call's kernel). Tests.
struct BackwardSplitLast {
  std::atomic<int> streaming{0};
  std::atomic<int> grads_form{0};
  std::atomic<int> sums_blocks{0};
};
BackwardSplitLast& backward_split_last();

// bwd21 (session 20), for tests and timing: the cache hints of the two f32 kernels that take them (backward.cu
// kBackwardDenseE32Hints, kBackwardBlockF32Hints: y and dy read L1::evict_last under an L2 evict-last policy, dx stored
// plainly): the dense warp kernel at E32 (2 blocks an SM: rows of 1024) and the unstaged 512-thread register block on
// rows dense for it (rows_dense at its threads and 16 elements, one block a row: rows of 512·k, 1536 … 8192 under the
// dispatcher). hints 0 takes their plain forms (the dense kernel's plain loads; the block's general kernel), 1 the
// hinted ones, anything else (-1) the dispatcher's (1 on both). The same values to the same addresses: the same bits.
// Process-wide, not synchronised. (bwd20's other hint sets, and its hints on the bf16 packed kernels, were removed:
// 97d7477 has them; backward.cu's note above kBackwardDenseE32Hints has their numbers.)
struct BackwardHintTuning {
  int hints = -1;
};
BackwardHintTuning& backward_hint_tuning();
// The last warp_per_row or 512-thread / wide register-block backward launch: whether it was one of those two kernels'
// launches (kernel 1 the dense warp kernel at E32, 2 the 512-thread block on dense f32 rows; 0 neither) and the hints
// it took (0 plain, 1 hinted). Tests and timing.
struct BackwardHintLast {
  std::atomic<int> kernel{0};
  std::atomic<int> hints{0};
};
BackwardHintLast& backward_hint_last();

// True where the dense kernel can serve the problem at `lanes` lanes of `elems` elements.
inline bool backward_dense_f32(const RowProblem& p, int lanes, int elems) {
  const bool bwd = p.op == Op::softmax_backward || p.op == Op::log_softmax_backward;
  return p.x_dtype == DType::f32 && bwd && rows_dense(p, lanes, elems);  // dx in y's dtype: rows_dense's out check
}

// launch_backward_warp_rows (kernels.hpp) with the dense kernel asked for where it can serve; the kernels.hpp form
// is this with no dense kernel.
void launch_backward_warp_rows(const RowProblem& p, WarpConfig c, WarpBackwardDense d, cudaStream_t s);

}  // namespace smk::cuda::kernels
