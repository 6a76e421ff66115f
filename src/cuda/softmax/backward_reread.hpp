// softmaxkit (internal): the override of the dispatcher's rule for the backward passes read twice
// (backward_reread.cu, kernels.hpp launch_backward_reread_rows), for tests and timing.
#pragma once

namespace smk::cuda::kernels {

// force: -1 the dispatcher's rule (softmax_cuda.cpp kBackwardRereadFromN16Log); 1 every block_per_row 16-bit
// softmax or log-softmax backward row of 4097..kBackwardRereadMaxN takes the re-read kernel (mid9's run of c16e5c4
// sent every dtype and op there; built for 16-bit rows only since session 9's review, F17; softmax backward built
// again by mid11, session 11); 0 none does.
// Process-wide, not synchronised: set it before the calls it should steer.
// form (mid12, session 12): -1 the dispatcher's form (backward_reread.cu reread_default_form: all three levers below for
// log-softmax backward, 0 for softmax backward); else a sum of the kReread* levers, for timing (tune_softmax --mid12)
// and the bitwise test that every form gives form 0's bits (the levers move loads and change cache policies, never the
// arithmetic or its order). Built: 0 and all three (7; mid12's run also timed 1, 3 and 4, since removed), the latter
// for log-softmax backward with dx in the input's type only (session 12's review F5): softmax backward and a dx in f32
// take form 0 whatever the form (so tune_softmax --mid12's softmax-backward "form 7" rows time form 0); a form other
// than -1, 0 or 7 throws smk::Error (invalid_argument, "form") before any launch.
constexpr int kRereadEvictLast = 1;  // the first loop's loads with an L2 evict-last policy (Triton's evict_last)
constexpr int kRereadStreamOut = 2;  // dx stored streaming (st.global.cs: nothing here reads it back)
constexpr int kRereadPairs = 4;      // the first loop loads two vectors a step (twice the bytes in flight)
struct BackwardRereadTuning {
  int force = -1;
  int form = -1;
};
BackwardRereadTuning& backward_reread_tuning();
// The form the latest launch of the re-read kernel took (-1 before any; session 12's review F4): tests of the
// dispatcher's form, beside kernels.hpp's backward_reread_launch_count.
int backward_reread_last_form();

}  // namespace smk::cuda::kernels
