// The conformance suite on the CPU backends: the float64 reference, the float path, and the public dispatch.
#include <gtest/gtest.h>

#include "conformance/fixture.hpp"

namespace smk::conformance {
INSTANTIATE_TEST_SUITE_P(Cpu, Conformance, ::testing::ValuesIn(cpu_backends()),
                         [](const auto& info) { return info.param.name; });
}  // namespace smk::conformance
