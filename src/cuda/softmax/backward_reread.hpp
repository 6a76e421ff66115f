// softmaxkit (internal): the override of the dispatcher's rule for the backward passes read twice
// (backward_reread.cu, kernels.hpp launch_backward_reread_rows), for tests and timing.
#pragma once

namespace smk::cuda::kernels {

// force: -1 the dispatcher's rule (softmax_cuda.cpp kBackwardRereadFromN16Log); 1 every block_per_row 16-bit
// softmax or log-softmax backward row of 4097..kBackwardRereadMaxN takes the re-read kernel (mid9's run of c16e5c4
// sent every dtype and op there; built for 16-bit rows only since session 9's review, F17; softmax backward built
// again by mid11, session 11); 0 none does.
// Process-wide, not synchronised: set it before the calls it should steer.
struct BackwardRereadTuning {
  int force = -1;
};
BackwardRereadTuning& backward_reread_tuning();

}  // namespace smk::cuda::kernels
