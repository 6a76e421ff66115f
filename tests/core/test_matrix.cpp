#include <gtest/gtest.h>

#include "softmaxkit/core/compare.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/core/matrix.hpp"

namespace {

// The lesson's GetRowReturnsAnIndependentCopy, checked on row 1: asking only for row 0 can hide a bad offset.
TEST(Matrix, RowReturnsAnIndependentCopy) {
  auto matrix = smk::Matrix::from(2, 3, {1, 2, 3, 4, 5, 6});
  auto row = matrix.row(1);
  EXPECT_EQ(row, (std::vector<float>{4, 5, 6}));
  row[0] = 99;
  EXPECT_EQ(matrix(1, 0), 4.0f);
}

TEST(Matrix, AccessIsBoundsChecked) {
  auto matrix = smk::Matrix::from(2, 3, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(matrix(1, 2), 6.0f);
  try {
    (void)matrix(2, 0);
    FAIL() << "row 2 of a 2-row matrix was accepted";
  } catch (const smk::Error& e) {
    EXPECT_EQ(e.code(), smk::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("'row'"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)matrix(0, 3), smk::Error);
  EXPECT_THROW((void)matrix(-1, 0), smk::Error);
  EXPECT_THROW((void)matrix.row(2), smk::Error);
}

TEST(Matrix, RejectsBadShapes) {
  EXPECT_THROW(smk::Matrix(0, 3), smk::Error);
  EXPECT_THROW(smk::Matrix(3, -1), smk::Error);
  try {
    (void)smk::Matrix::from(2, 2, {1, 2, 3});
    FAIL();
  } catch (const smk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'values'"), std::string::npos) << e.what();
  }
}

TEST(Matrix, ViewIsRowMajor) {
  auto matrix = smk::Matrix::from(2, 3, {1, 2, 3, 4, 5, 6});
  const smk::TensorView v = matrix.view();
  EXPECT_EQ(v.rank, 2);
  EXPECT_EQ(v.shape[0], 2);
  EXPECT_EQ(v.strides[0], 3);
  EXPECT_EQ(v.strides[1], 1);
  EXPECT_TRUE(v.is_contiguous());
}

// The lesson's CheckResults: NaN on both sides must not pass, and neither must a finite mismatch.
TEST(CompareFinite, RejectsNonFiniteEvenWhenBothAgree) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> a = {nan, 1.0f}, e = {nan, 1.0f};
  const auto r = smk::compare_finite(a, e, 1e-5);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.index, 0);
  EXPECT_NE(r.message.find("expected NaN, got NaN"), std::string::npos) << r.message;
  EXPECT_FALSE(smk::compare_finite(std::vector<float>{1.0f}, std::vector<float>{1.1f}, 1e-5).ok);
  EXPECT_TRUE(smk::compare_finite(std::vector<float>{1.0f}, std::vector<float>{1.000001f}, 1e-5).ok);
  EXPECT_FALSE(smk::compare_finite(std::vector<float>{1.0f}, std::vector<float>{1.0f, 2.0f}, 1e-5).ok);
}

}  // namespace
