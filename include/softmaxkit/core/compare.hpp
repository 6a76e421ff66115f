// softmaxkit: the lesson's result check. Two implementations that agree on NaN must not pass, so any non-finite
// value on either side fails the comparison; otherwise each element must be within an absolute tolerance.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace smk {

struct Comparison {
  bool ok = true;
  std::int64_t index = -1;  // first failing element, or -1
  std::string message;      // e.g. "element 0: expected NaN, got NaN (non-finite values never pass)"
};

Comparison compare_finite(std::span<const float> actual, std::span<const float> expected, double abs_tolerance);

}  // namespace smk
