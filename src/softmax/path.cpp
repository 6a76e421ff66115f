// softmaxkit: the per-thread kernel-path override of softmaxkit/cuda/softmax_path.hpp. Compiled in every build so
// tests and tools can name paths without CUDA; a CPU-only build offers only `automatic`.
#include "softmax/path.hpp"

#include "softmaxkit/build_config.hpp"

namespace smk::cuda {

namespace {
thread_local SoftmaxPath forced = SoftmaxPath::automatic;
}

const char* to_string(SoftmaxPath path) noexcept {
  switch (path) {
    case SoftmaxPath::automatic: return "automatic";
    case SoftmaxPath::lesson_row_per_thread: return "lesson_row_per_thread";
    case SoftmaxPath::warp_per_row: return "warp_per_row";
    case SoftmaxPath::block_per_row: return "block_per_row";
    case SoftmaxPath::cluster_row: return "cluster_row";
    case SoftmaxPath::split_row: return "split_row";
    case SoftmaxPath::strided_inner: return "strided_inner";
    case SoftmaxPath::grid_row: return "grid_row";
  }
  return "unknown";
}

std::vector<SoftmaxPath> softmax_paths() {
#if SOFTMAXKIT_HAS_CUDA
  // Keep in step with the kernels src/cuda/softmax/ provides.
  return {SoftmaxPath::automatic,    SoftmaxPath::lesson_row_per_thread, SoftmaxPath::warp_per_row,
          SoftmaxPath::block_per_row, SoftmaxPath::cluster_row,           SoftmaxPath::split_row,
          SoftmaxPath::strided_inner, SoftmaxPath::grid_row};
#else
  return {SoftmaxPath::automatic};
#endif
}

ScopedSoftmaxPath::ScopedSoftmaxPath(SoftmaxPath path) : previous_(forced) { forced = path; }
ScopedSoftmaxPath::~ScopedSoftmaxPath() { forced = previous_; }

SoftmaxPath forced_softmax_path() noexcept { return forced; }

}  // namespace smk::cuda
