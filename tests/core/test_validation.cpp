// Misuse of the public API: every case gets smk::Error naming the argument, and the output is left untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "softmaxkit/core/error.hpp"
#include "softmaxkit/matmul.hpp"
#include "softmaxkit/softmax.hpp"

namespace {

using smk::DType;
using smk::TensorView;

struct Case {
  const char* name;
  const char* expected_in_message;  // the argument the message must name
  std::function<void(float* out, float* in)> call;
};

TEST(Validation, MisuseIsRejectedClearlyAndWritesNothing) {
  const std::vector<Case> cases = {
      {"shape mismatch", "'out'",
       [](float* out, float* in) { smk::softmax(TensorView::of(out, {2, 4}), TensorView::of(in, {2, 3})); }},
      {"dtype not allowed for out", "'out'",
       [](float* out, float* in) {
         smk::softmax(TensorView::contiguous(out, DType::f16, smk::Device::cpu(), {2, 3}), TensorView::of(in, {2, 3}));
       }},
      {"null input", "'in'",
       [](float* out, float*) { smk::softmax(TensorView::of(out, {2, 3}), TensorView::of<float>(nullptr, {2, 3})); }},
      {"null output", "'out'",
       [](float*, float* in) { smk::softmax(TensorView::of<float>(nullptr, {2, 3}), TensorView::of(in, {2, 3})); }},
      {"negative size", "'in'",
       [](float* out, float* in) { smk::softmax(TensorView::of(out, {2, 3}), TensorView::of(in, {2, -3})); }},
      {"negative stride", "'in'",
       [](float* out, float* in) {
         smk::softmax(TensorView::of(out, {2, 3}),
                      TensorView::strided(in, DType::f32, smk::Device::cpu(), {2, 3}, {3, -1}));
       }},
      {"element count overflows", "'in'",
       [](float* out, float* in) {
         smk::logsumexp(TensorView::of(out, {1}),
                        TensorView::of(in, {int64_t{1} << 40, int64_t{1} << 40}));
       }},
      {"extent overflows", "'in'",
       [](float* out, float* in) {
         smk::softmax(TensorView::of(out, {2, 3}), TensorView::strided(in, DType::f32, smk::Device::cpu(), {2, 3},
                                                                        {int64_t{1} << 62, 1}));
       }},
      {"dim out of range", "'options.dim'",
       [](float* out, float* in) {
         smk::softmax(TensorView::of(out, {2, 3}), TensorView::of(in, {2, 3}), {.dim = 2});
       }},
      {"rank zero", "'in'",
       [](float* out, float* in) { smk::softmax(TensorView::of(out, {}), TensorView::of(in, {})); }},
      {"output overlaps itself", "'out'",
       [](float* out, float* in) {
         smk::softmax(TensorView::strided(out, DType::f32, smk::Device::cpu(), {2, 3}, {1, 1}),
                      TensorView::of(in, {2, 3}));
       }},
      {"partial overlap of out and in", "'out'",
       [](float*, float* in) { smk::softmax(TensorView::of(in + 1, {2, 3}), TensorView::of(in, {2, 3})); }},
      {"logsumexp output shape", "'out'",
       [](float* out, float* in) { smk::logsumexp(TensorView::of(out, {3}), TensorView::of(in, {2, 3})); }},
      {"logsumexp aliasing its input", "'out'",
       [](float*, float* in) { smk::logsumexp(TensorView::of(in, {2}), TensorView::of(in, {2, 3}), {.dim = 1}); }},
      {"device mismatch", "'out'",
       [](float* out, float* in) {
         smk::softmax(TensorView::of(out, {2, 3}, smk::Device::cuda(0)), TensorView::of(in, {2, 3}));
       }},
      {"bad empty-row policy", "'options.empty_rows'",
       [](float* out, float* in) {
         smk::softmax(TensorView::of(out, {2, 3}), TensorView::of(in, {2, 3}),
                      {.dim = -1, .empty_rows = static_cast<smk::EmptyRowPolicy>(7)});
       }},
      {"matmul inner dimensions", "'b'",
       [](float* out, float* in) {
         smk::matmul(TensorView::of(out, {2, 2}), TensorView::of(in, {2, 3}), TensorView::of(in + 6, {2, 2}));
       }},
      {"matvec output shape", "'out'",
       [](float* out, float* in) {
         smk::matvec(TensorView::of(out, {3}), TensorView::of(in, {2, 3}), TensorView::of(in + 6, {3}));
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<float> in(64, 1.0f), out(64);
    std::memset(out.data(), 0x7f, out.size() * sizeof(float));  // a recognisable poison
    const std::vector<float> out_before = out, in_before = in;
    try {
      c.call(out.data(), in.data());
      ADD_FAILURE() << "accepted";
    } catch (const smk::Error& e) {
      EXPECT_EQ(e.code(), smk::ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(c.expected_in_message), std::string::npos) << e.what();
    }
    EXPECT_EQ(std::memcmp(out.data(), out_before.data(), out.size() * sizeof(float)), 0) << "output was written";
    EXPECT_EQ(in, in_before) << "input was written";
  }
}

TEST(Validation, MessageNamesOperationAndShapes) {
  std::vector<float> in(6), out(8);
  try {
    smk::softmax(TensorView::of(out.data(), {2, 4}), TensorView::of(in.data(), {2, 3}));
    FAIL();
  } catch (const smk::Error& e) {
    EXPECT_STREQ(e.what(), "softmax: argument 'out': shape [2, 4] does not match 'in' shape [2, 3]");
  }
}

TEST(Validation, EmptyTensorsMayHaveNullData) {
  // Zero rows: nothing to read or write, so a null pointer is fine and the call returns at once.
  EXPECT_NO_THROW(smk::softmax(TensorView::of<float>(nullptr, {0, 5}), TensorView::of<float>(nullptr, {0, 5})));
  EXPECT_NO_THROW(smk::softmax(TensorView::of<float>(nullptr, {4, 0}), TensorView::of<float>(nullptr, {4, 0})));
}

}  // namespace
