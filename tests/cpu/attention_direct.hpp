// Test support: attention evaluated straight from its definition in long double (all scores at once, no blocks, no
// online rescaling), the reference that tests/cpu/test_attention*.cpp hold the library's paths against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace smk_test {

struct DirectRow {
  std::vector<long double> o;
  long double lse;
};

// One query row against keys [0, visible) of one KV head (rows `kv_stride` apart), with an optional sink logit.
inline DirectRow direct(const double* q, const double* k, const double* v, std::int64_t visible, std::int64_t d,
                        std::int64_t kv_stride, long double scale, const double* sink) {
  std::vector<long double> s(visible);
  long double m = sink ? static_cast<long double>(*sink) : -INFINITY;
  for (std::int64_t j = 0; j < visible; ++j) {
    long double dot = 0;
    for (std::int64_t x = 0; x < d; ++x) dot += static_cast<long double>(q[x]) * k[j * kv_stride + x];
    s[j] = scale * dot;
    m = std::max(m, s[j]);
  }
  DirectRow e{std::vector<long double>(d, 0), -INFINITY};
  if (visible == 0 && !sink) return e;
  long double l = sink ? std::exp(static_cast<long double>(*sink) - m) : 0;
  for (std::int64_t j = 0; j < visible; ++j) l += std::exp(s[j] - m);
  for (std::int64_t j = 0; j < visible; ++j)
    for (std::int64_t x = 0; x < d; ++x) e.o[x] += std::exp(s[j] - m) / l * v[j * kv_stride + x];
  e.lse = m + std::log(l);
  return e;
}

inline std::vector<double> randn(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0, 1);
  std::vector<double> x(n);
  for (auto& v : x) v = dist(rng);
  return x;
}

}  // namespace smk_test
