#include "softmaxkit/core/compare.hpp"

#include <cmath>
#include <cstdio>

namespace smk {

namespace {
std::string show(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return std::isnan(v) ? "NaN" : buf;
}
}  // namespace

Comparison compare_finite(std::span<const float> actual, std::span<const float> expected, double abs_tolerance) {
  if (actual.size() != expected.size())
    return {false, -1, "sizes differ: " + std::to_string(actual.size()) + " vs " + std::to_string(expected.size())};
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const float a = actual[i], e = expected[i];
    const bool finite = std::isfinite(a) && std::isfinite(e);
    if (!finite || std::fabs(static_cast<double>(a) - e) > abs_tolerance) {
      std::string msg = "element " + std::to_string(i) + ": expected " + show(e) + ", got " + show(a);
      if (!finite) msg += " (non-finite values never pass)";
      return {false, static_cast<std::int64_t>(i), msg};
    }
  }
  return {};
}

}  // namespace smk
