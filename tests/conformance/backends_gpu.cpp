// The conformance suite on the GPU: every kernel path of smk::cuda::softmax_paths(), forced one by one with
// ScopedSoftmaxPath ("automatic" is the dispatcher's own choice). Skipped, with the reason, without a GPU.
#include <gtest/gtest.h>

#include "conformance/fixture.hpp"

namespace smk::conformance {
INSTANTIATE_TEST_SUITE_P(Gpu, Conformance, ::testing::ValuesIn(gpu_backends()),
                         [](const auto& info) { return info.param.name; });
}  // namespace smk::conformance
