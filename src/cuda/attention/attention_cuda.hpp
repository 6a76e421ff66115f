// softmaxkit (internal): the CUDA backend of attention, called by src/attention/dispatch.cpp after validation.
#pragma once

#include "softmaxkit/attention.hpp"

namespace smk::cuda {

void merge_attention_states(std::int64_t rows, const TensorView& out_o, const TensorView& out_lse,
                            const TensorView& o_a, const TensorView& lse_a, const TensorView& o_b,
                            const TensorView& lse_b, Stream stream);

}  // namespace smk::cuda
