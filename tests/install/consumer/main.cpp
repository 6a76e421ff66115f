// A downstream project: uses softmaxkit through find_package only.
#include <softmaxkit/softmaxkit.hpp>

#include <cmath>
#include <cstdio>

int main() {
  const float in[3] = {1000.0f, 1001.0f, 1002.0f};
  float out[3] = {};
  smk::softmax(smk::TensorView::of(out, {1, 3}), smk::TensorView::of(in, {1, 3}));
  // softmax([1000, 1001, 1002]) = softmax([0, 1, 2]) = e^i / (1 + e + e^2)
  const double total = 1.0 + std::exp(1.0) + std::exp(2.0);
  for (int i = 0; i < 3; ++i)
    if (std::fabs(out[i] - std::exp(double(i)) / total) > 1e-6) return 1;
  std::printf("consumer ok (softmaxkit %s, CUDA %s)\n", SOFTMAXKIT_VERSION, smk::cuda_built() ? "built" : "not built");
  return 0;
}
