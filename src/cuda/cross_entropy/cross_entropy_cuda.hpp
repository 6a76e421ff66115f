// softmaxkit (internal): the CUDA backend of cross-entropy, called by src/cross_entropy/dispatch.cpp after the
// arguments were validated (src/cross_entropy/args.cpp). Semantics: include/softmaxkit/cross_entropy.hpp.
//
// Bad targets and bad class weights are only visible to the kernels. They record the first offending row (or class)
// in a device flag; after the last kernel the host copies the flag back and waits for the stream
// (cudaStreamSynchronize), then throws smk::Error naming the op and the argument. So every call returns with its
// kernels finished, and cannot be captured into a CUDA graph. The outputs are written before the check: the bad
// rows' loss (and any reduction over it) is NaN, their gradient rows NaN.
#pragma once

#include "cross_entropy/args.hpp"
#include "softmaxkit/cross_entropy.hpp"

namespace smk::cuda {

void cross_entropy_forward(const char* op, const detail::CrossEntropyProblem& p, const TensorView& loss,
                           const TensorView& logits, const TensorView& targets, const CrossEntropyOptions& options,
                           const TensorView& lse, const TensorView& z_loss, Stream stream);
void cross_entropy_backward(const char* op, const detail::CrossEntropyProblem& p, const TensorView& grad_logits,
                            const TensorView& logits, const TensorView& targets, const TensorView& grad_loss,
                            const CrossEntropyOptions& options, const TensorView& lse, Stream stream);
// Forward + backward in one call (fused.cu): one read of the logits where a row fits on chip (a block or a cluster
// of blocks, no soft-capping), else fused_two_read. grad_loss null: 1.
void cross_entropy_forward_backward(const char* op, const detail::CrossEntropyProblem& p, const TensorView& loss,
                                    const TensorView& grad_logits, const TensorView& logits,
                                    const TensorView& targets, const CrossEntropyOptions& options,
                                    const TensorView& grad_loss, const TensorView& lse, const TensorView& z_loss,
                                    Stream stream);
// The same by the two existing calls (forward with the LSE, then the backward from it): the logits read twice.
void fused_two_read(const char* op, const detail::CrossEntropyProblem& p, const TensorView& loss,
                    const TensorView& grad_logits, const TensorView& logits, const TensorView& targets,
                    const CrossEntropyOptions& options, const TensorView& grad_loss, const TensorView& lse,
                    const TensorView& z_loss, Stream stream);

}  // namespace smk::cuda

namespace smk::cuda::ce {
// Tuning hook (tests/cuda/cross_entropy/tune_cross_entropy.cpp, tests): the fused kernel's cluster size, when at
// least what a row needs and at most 16 (0: the dispatcher's, the fewest blocks that hold a row); whether each block
// bulk-copies its share of its next rows into shared memory while it works on the current one (row_stage.cuh; −1:
// the dispatcher's rule, fused.cu stage_rule: kFusedStage16 for 16-bit rows, kFusedStageF32 for f32;
// 0 off; 1 on; only rows that are 16-byte aligned with unit stride are ever staged); whether every row the kernel
// can hold (up to 16 wide blocks, 524288
// classes) takes it, not only those the dispatcher sends there (fused.cu, kFusedAutoMaxCols); the block kind (0 or
// 1024: the wide block, 1024 × 32 logits, the dispatcher's; 512: the narrow block, 512 × 24).
// Staging by default: the earlier per-thread cp.async staging lost 1-6 % on the wide block (H200 run of ef4d08c,
// 2026-11-30, docs/perf-notebook.md "ce3"); the bulk copy (one thread issuing, two buffers for 16-bit rows) replaced it
// in session 6 (ce4). H200 run of af97358 (µs staged / unstaged): bf16 8192×32000 462 / 482, 16384×8192 231 / 236,
// on clusters slower (4096×65536 565 / 503, 4096×151936 1521 / 1486); f32 slower everywhere (8192×32000 662 / 602).
// Session 7 (ce5, run of 88d0035, with the targets' ring of 16-bit rows): clusters faster staged too (4096×151936
// bf16 1430 / 1529, f16 1431 / 1520); f32 still slower (8192×32000 749 / 599).
constexpr bool kFusedStage16 = true;
constexpr bool kFusedStageF32 = false;
// Dependent launches (kFusedPdl): the one-read kernel and the reduction after it start as programmatic dependents
// of the kernel before each (griddepcontrol), so each is scheduled while the one before drains; the dispatcher asks
// for them on single-block launches (cluster 1) only (test: CrossEntropyGpuFused.PdlRuleAndSameBits).
// Measured (ce9, session 9, H200, two calls of 6553958 at 13:04 and 13:06 UTC, tune_cross_entropy, in place, mean,
// median of 9 / 21 repeats a sample; docs/bench/ce9-s9-2026-11-30.md), µs:
//   8192×32000 f32:  dependent 572.3–583.3 (7 samples, median 577.8: 85.0 % of the 2n bound) against plain
//                    579.6–604.1 (14, median 582.9); bf16 375.2–378.6 (median 377.1) against 377.6–382.8 (379.4);
//   4096×151936 (5-block clusters): f32 1762.5 / 1731.5 against 1722.1 / 1732.4, bf16 1442.0 / 1444.9 against
//                    1441.4 / 1441.9: no gain, so clusters launch plain.
// The same runs timed a tail launch (the last partial round's rows on clusters, the same bits) slower at every shape
// (f32 8192×32000 medians 592.2–596.4 plain, 580.9–587.2 dependent); it was removed after the session's review
// (F15; 6553958 has it).
constexpr bool kFusedPdl = true;
// The mean's f32 target entries re-formed in double by the mean's kernel (ce10, session 10; TargetFix in
// common.cuh): an f32 gradient under the mean. On by default since the session's review (the lead's decision: never
// less accurate than PyTorch on the same input). ce10's H200 run of 86188de (2026-11-30 14:56 UTC,
// tune_cross_entropy, in place, mean; docs/bench/ce10-s10-2026-11-30.md) timed it slower, f32 8192×32000 598.4–638.6
// µs (median of 7 samples 613.5, 2.1 %) against 588.6–617.5 (601.1) without it, 4096×151936 1772.0 / 1777.3 against
// 1753.2 / 1747.7 (1.4 %); it ran first in every sample (slot order not rotated), so part of that may be position.
// Its test (CrossEntropyGpuFused.TargetEntryUnderTheMean) passed there at 0.728 of a gate of half an ulp plus
// g·(1 − p_t)·p_t·5.5u, which the f32 form (about 1.5 ulps) does not meet; whether it closes vs_torch_ce.py's two
// comparisons worse than torch (f32 target entries under the mean) has not been measured on a GPU.
constexpr bool kFusedTargetFix = true;
struct FusedTuning {
  int cluster = 0;
  int stage = -1;
  bool any_width = false;
  int threads = 0;
  int pdl = -1;  // −1: kFusedPdl on single-block launches, plain on clusters; 0 off; 1 on
  int target_fix = -1;  // −1: kFusedTargetFix; 0 off; 1 on
  // The row loop (ce11, row_loop.cuh): −1 the dispatcher's rule (fused.cu row_loop_rule), 0 never, 1 every row it
  // serves; its blocks an SM (0: the kernel's occupancy, two) and its cache hints (−1 / 1 on, 0 off). Neither the
  // blocks nor the hints change a bit of the results (the grid only changes which block owns a row).
  int row_loop = -1;
  int loop_blocks = 0;
  int loop_hints = -1;
  // ce12: the row loop's steps kept in shared memory (row_loop.cuh kStaged; −1: fused.cu loop_stage_steps, 0 none,
  // up to 6; the same bits whatever the value; none where the device cannot give a block that many:
  // row_loop_stage_fit).
  int loop_stage = -1;
};
void set_fused_tuning(const FusedTuning& t);
// The shape of the last one-read launch on this host thread (thread_local; tuning and the tests read it after a call):
// blocks a cluster, threads a block, clusters resident at once (cudaOccupancyMaxActiveClusters, or blocks an SM ×
// SMs for one block a row) and the grid's blocks.
struct FusedLaunch {
  int cluster = 0, threads = 0, resident = 0, grid = 0;
  bool pdl = false;
  bool row_loop = false;  // the row loop (row_loop.cuh) ran: cluster 1, `resident` its blocks an SM × SMs
  // Its steps staged in shared memory (ce12): those asked for (tuning's loop_stage or loop_stage_steps; the kernel
  // uses at most the row's whole steps), or 0 where the rows are not 16-byte vectors or the device cannot give a
  // block that many (row_loop_stage_fit).
  int loop_stage = 0;
};
FusedLaunch last_fused_launch();
void set_last_fused_launch(const FusedLaunch& l);
// Whether cross_entropy_forward_backward would try the one-read kernel for these logits and options.
bool fused_supported(const TensorView& logits, const CrossEntropyOptions& options);
// The row loop's staged steps a device gives a block (fused.cu; review F1 of session 12): `steps` where their dynamic
// shared memory (steps · 32 KB, row_loop.cuh kLoopStepBytes) and the kernel's static `static_smem` bytes fit the
// device's opt-in limit `max_smem_optin` (cudaDevAttrMaxSharedMemoryPerBlockOptin), else 0 (the unstaged kernel).
int row_loop_stage_fit(int steps, int static_smem, int max_smem_optin);
// The dispatcher's rule for the row loop (fused.cu), by the classes and the logits' dtype alone.
bool row_loop_rule(std::int64_t classes, DType logits);
// Whether cross_entropy_forward_backward runs the row loop for these logits and options under the current tuning:
// row_loop 1, or −1 with the rule (and no tuning override of the one-read kernel's shape: cluster, threads or
// any_width); never for soft-capped rows or rows over its 32-bit element indices.
bool row_loop_takes(std::int64_t classes, DType logits, const CrossEntropyOptions& options);
}  // namespace smk::cuda::ce
