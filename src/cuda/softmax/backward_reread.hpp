// softmaxkit (internal): the override of the dispatcher's rule for the backward passes read twice
// (backward_reread.cu, kernels.hpp launch_backward_reread_rows), for tests and timing.
#pragma once

namespace smk::cuda::kernels {

// force: -1 the dispatcher's rule (softmax_cuda.cpp kBackwardRereadFromN16Log); 1 every block_per_row 16-bit
// softmax or log-softmax backward row of 4097..kBackwardRereadMaxN takes the re-read kernel (mid9's run of c16e5c4
// sent every dtype and op there; built for 16-bit rows only since session 9's review, F17; softmax backward built
// again by mid11, session 11); 0 none does.
// Process-wide, not synchronised: set it before the calls it should steer.
// form (mid12, session 12): -1 the kernel's default form (backward_reread.cu kRereadDefaultForm); else a sum of the
// kReread* levers below, for timing (tune_softmax --mid12) and the bitwise test that every form gives the default's
// bits (the levers move loads and change cache policies, never the arithmetic or its order). Forms other than the
// default are built for dx in the input's type only (a dx in f32 always takes the default form).
constexpr int kRereadEvictLast = 1;  // the first loop's loads with an L2 evict-last policy (Triton's evict_last)
constexpr int kRereadStreamOut = 2;  // dx stored streaming (st.global.cs: nothing here reads it back)
constexpr int kRereadPairs = 4;      // the first loop loads two vectors a step (twice the bytes in flight)
struct BackwardRereadTuning {
  int force = -1;
  int form = -1;
};
BackwardRereadTuning& backward_reread_tuning();

}  // namespace smk::cuda::kernels
