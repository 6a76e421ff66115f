// softmaxkit (internal): reading the kernel-path override set by ScopedSoftmaxPath.
#pragma once

#include "softmaxkit/cuda/softmax_path.hpp"

namespace smk::cuda {

// The path forced on this thread, or SoftmaxPath::automatic.
SoftmaxPath forced_softmax_path() noexcept;

}  // namespace smk::cuda
