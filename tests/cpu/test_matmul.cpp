#include <gtest/gtest.h>

#include <vector>

#include "softmaxkit/core/matrix.hpp"
#include "softmaxkit/matmul.hpp"

namespace {

// The lesson's products: [[1,2,3],[4,5,6]] · [[7,8],[9,10],[11,12]] = [[58,64],[139,154]], and · [1,2,3] = [14,32].
TEST(CpuMatmul, LessonProducts) {
  const auto a = smk::Matrix::from(2, 3, {1, 2, 3, 4, 5, 6});
  const auto b = smk::Matrix::from(3, 2, {7, 8, 9, 10, 11, 12});
  for (auto* fn : {&smk::cpu::matmul, &smk::cpu::reference::matmul}) {
    smk::Matrix out(2, 2);
    fn(out.view(), a.view(), b.view());
    EXPECT_EQ(out, smk::Matrix::from(2, 2, {58, 64, 139, 154}));
  }
  smk::Matrix out(2, 2);
  smk::matmul(out.view(), a.view(), b.view());
  EXPECT_EQ(out, smk::Matrix::from(2, 2, {58, 64, 139, 154}));

  const std::vector<float> x = {1, 2, 3};
  for (auto* fn : {&smk::cpu::matvec, &smk::cpu::reference::matvec}) {
    std::vector<float> y(2, -1.0f);
    fn(smk::TensorView::of(y.data(), {2}), a.view(), smk::TensorView::of(x.data(), {3}));
    EXPECT_EQ(y, (std::vector<float>{14, 32}));
  }
}

TEST(CpuMatmul, TransposedViewOfB) {
  // b given as the transpose of a row-major [2, 3] buffer: strides (1, 3).
  const auto a = smk::Matrix::from(2, 3, {1, 2, 3, 4, 5, 6});
  const std::vector<float> bt = {7, 9, 11, 8, 10, 12};
  smk::Matrix out(2, 2);
  smk::cpu::matmul(out.view(), a.view(),
                   smk::TensorView::strided(const_cast<float*>(bt.data()), smk::DType::f32, smk::Device::cpu(), {3, 2},
                                            {1, 3}));
  EXPECT_EQ(out, smk::Matrix::from(2, 2, {58, 64, 139, 154}));
}

}  // namespace
