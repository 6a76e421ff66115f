// softmaxkit: which CUDA kernel serves a softmax-family call. The dispatcher chooses; tests and benchmarks may
// force one path to hold every kernel to the same contract. No CUDA headers needed.
#pragma once

#include <vector>

namespace smk::cuda {

enum class SoftmaxPath {
  automatic,              // the dispatcher's choice (the default)
  lesson_row_per_thread,  // the lesson's kernels: f32, contiguous, last dim only
  warp_per_row,           // several rows per warp / a warp per row, row in registers: short rows
  block_per_row,          // a block per row, row in registers or shared memory: medium rows
  cluster_row,            // a thread-block cluster per row in distributed shared memory: vocabulary-size rows
  split_row,              // a row split across blocks, (m, l) states merged: few or enormous rows
  strided_inner,          // reduction over a non-last dimension (outer × dim × inner) without a transpose
  grid_row,               // split_row's chunks in one grid-resident launch, staged on chip: few long rows (forward)
};

const char* to_string(SoftmaxPath path) noexcept;
// Every path this build provides, `automatic` first.
std::vector<SoftmaxPath> softmax_paths();

// While alive, every softmax-family call on this thread takes `path`; a call that path cannot serve throws
// smk::Error(unsupported) naming the path and the reason, instead of silently taking another. For tests and
// benchmarks. Guards nest; the destructor restores the previous choice.
class ScopedSoftmaxPath {
 public:
  explicit ScopedSoftmaxPath(SoftmaxPath path);
  ~ScopedSoftmaxPath();
  ScopedSoftmaxPath(const ScopedSoftmaxPath&) = delete;
  ScopedSoftmaxPath& operator=(const ScopedSoftmaxPath&) = delete;

 private:
  SoftmaxPath previous_;
};

}  // namespace smk::cuda
