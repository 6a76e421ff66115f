// Misuse of the public API: every case gets smk::Error naming the argument, and the output is left untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "softmaxkit/attention.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cross_entropy.hpp"
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

// The table of misuse over every public entry point (issue 4): softmax, log_softmax, logsumexp, softmax_state, the
// backward passes, cross_entropy (and its backward), attention_forward, merge_attention_states, matmul and matvec.
// Each row is one defect in an otherwise valid call; the call must throw Error(invalid_argument) whose message
// names the op and the argument at fault, and leave every buffer it was given untouched.
namespace {

using smk::Device;
using smk::SoftmaxOptions;

// One misuse: `call` receives two scratch buffers — `out`, poisoned, and `in`: floats 0..5 are the [2, 3] input
// 1..6, 32.. other operands (0.5, valid temperatures, except in[34] = 0), 40..47 zero bytes (i64 targets 0) — and
// makes one defective call.
struct Misuse {
  const char* name;
  const char* op;   // the message must start with "<op>:"
  const char* arg;  // and name "argument '<arg>'"
  std::function<void(float* out, float* in)> call;
};

TensorView f32(float* p, std::initializer_list<std::int64_t> shape) { return TensorView::of(p, shape); }
TensorView typed(void* p, DType t, std::initializer_list<std::int64_t> shape) {
  return TensorView::contiguous(p, t, Device::cpu(), shape);
}
SoftmaxOptions with_temperature(float t) {
  SoftmaxOptions o;
  o.temperature = t;
  return o;
}

std::vector<Misuse> softmax_family_misuse() {
  std::vector<Misuse> m;
  using Fn = void (*)(const TensorView&, const TensorView&, const SoftmaxOptions&, smk::Stream);
  const std::pair<const char*, Fn> forward_ops[] = {{"softmax", &smk::softmax}, {"log_softmax", &smk::log_softmax}};
  for (auto [op, fn] : forward_ops) {
    m.push_back({"input dtype i32", op, "in", [fn](float* out, float* in) { fn(f32(out, {2, 3}), typed(in, DType::i32, {2, 3}), {}, {}); }});
    m.push_back({"input dtype b8", op, "in", [fn](float* out, float* in) { fn(f32(out, {2, 3}), typed(in, DType::b8, {2, 3}), {}, {}); }});
    m.push_back({"unknown dtype code", op, "in", [fn](float* out, float* in) {
                   fn(f32(out, {2, 3}), typed(in, static_cast<DType>(42), {2, 3}), {}, {}); }});
    m.push_back({"output too small", op, "out", [fn](float* out, float* in) { fn(f32(out, {2, 2}), f32(in, {2, 3}), {}, {}); }});
    m.push_back({"output bf16 for f32 input", op, "out", [fn](float* out, float* in) {
                   fn(typed(out, DType::bf16, {2, 3}), f32(in, {2, 3}), {}, {}); }});
    m.push_back({"f64 on a CUDA device", op, "in", [fn](float* out, float* in) {
                   fn(TensorView::contiguous(out, DType::f64, Device::cuda(0), {2, 3}),
                      TensorView::contiguous(in, DType::f64, Device::cuda(0), {2, 3}), {}, {}); }});
    m.push_back({"output on another device", op, "out", [fn](float* out, float* in) {
                   fn(TensorView::of(out, {2, 3}, Device::cuda(0)), f32(in, {2, 3}), {}, {}); }});
    m.push_back({"negative device index", op, "in", [fn](float* out, float* in) {
                   fn(f32(out, {2, 3}), TensorView::contiguous(in, DType::f32, Device{Device::Kind::cpu, -1}, {2, 3}), {}, {}); }});
    m.push_back({"rank above the maximum", op, "in", [fn](float* out, float* in) {
                   TensorView v = f32(in, {1, 1, 1, 1, 1, 1, 1, 6});
                   v.rank = 9;
                   fn(f32(out, {6}), v, {}, {}); }});
    m.push_back({"element count overflows 64 bits", op, "in", [fn](float* out, float* in) {
                   fn(f32(out, {2, 3}), f32(in, {std::int64_t{1} << 40, std::int64_t{1} << 40}), {}, {}); }});
    for (float t : {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()})
      m.push_back({"bad temperature", op, "options.temperature", [fn, t](float* out, float* in) {
                     fn(f32(out, {2, 3}), f32(in, {2, 3}), with_temperature(t), {}); }});
    m.push_back({"per-row temperature of the wrong shape", op, "options.temperature_per_row", [fn](float* out, float* in) {
                   SoftmaxOptions o;
                   o.temperature_per_row = f32(in + 32, {3});
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), o, {}); }});
    m.push_back({"per-row temperature in f16", op, "options.temperature_per_row", [fn](float* out, float* in) {
                   SoftmaxOptions o;
                   o.temperature_per_row = typed(in + 32, DType::f16, {2});
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), o, {}); }});
    m.push_back({"per-row temperature of 0", op, "options.temperature_per_row", [fn](float* out, float* in) {
                   SoftmaxOptions o;
                   o.temperature_per_row = f32(in + 33, {2});  // [0.5, 0]
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), o, {}); }});
    m.push_back({"scalar and per-row temperature together", op, "options.temperature", [fn](float* out, float* in) {
                   SoftmaxOptions o = with_temperature(2.0f);
                   o.temperature_per_row = f32(in + 32, {2});
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), o, {}); }});
    m.push_back({"mask of the wrong shape", op, "options.mask", [fn](float* out, float* in) {
                   SoftmaxOptions o;
                   o.mask = f32(in + 32, {2, 2});
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), o, {}); }});
    m.push_back({"mask of the wrong rank", op, "options.mask", [fn](float* out, float* in) {
                   SoftmaxOptions o;
                   o.mask = f32(in + 32, {3});
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), o, {}); }});
    m.push_back({"mask of dtype i32", op, "options.mask", [fn](float* out, float* in) {
                   SoftmaxOptions o;
                   o.mask = typed(in + 32, DType::i32, {2, 3});
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), o, {}); }});
    m.push_back({"mask on another device", op, "options.mask", [fn](float* out, float* in) {
                   SoftmaxOptions o;
                   o.mask = TensorView::of(in + 32, {2, 3}, Device::cuda(0));
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), o, {}); }});
    m.push_back({"output overlapping the mask", op, "out", [fn](float* out, float* in) {
                   SoftmaxOptions o;
                   o.mask = f32(out + 2, {2, 3});
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), o, {}); }});
    m.push_back({"in place with a dtype change", op, "out", [fn](float*, float* in) {
                   fn(f32(in, {2, 3}), typed(in, DType::f16, {2, 3}), {}, {}); }});
  }
  m.push_back({"logsumexp output too small", "logsumexp", "out", [](float* out, float* in) {
                 smk::logsumexp(f32(out, {1}), f32(in, {2, 3})); }});
  m.push_back({"logsumexp output in f16", "logsumexp", "out", [](float* out, float* in) {
                 smk::logsumexp(typed(out, DType::f16, {2}), f32(in, {2, 3})); }});
  m.push_back({"logsumexp dim out of range", "logsumexp", "options.dim", [](float* out, float* in) {
                 SoftmaxOptions o;
                 o.dim = -3;
                 smk::logsumexp(f32(out, {2}), f32(in, {2, 3}), o); }});
  m.push_back({"logsumexp bad temperature", "logsumexp", "options.temperature", [](float* out, float* in) {
                 smk::logsumexp(f32(out, {2}), f32(in, {2, 3}), with_temperature(-2.0f)); }});
  m.push_back({"logsumexp null input", "logsumexp", "in", [](float* out, float*) {
                 smk::logsumexp(f32(out, {2}), f32(nullptr, {2, 3})); }});

  m.push_back({"state: max of the wrong shape", "softmax_state", "out_max", [](float* out, float* in) {
                 smk::softmax_state(f32(out, {3}), f32(out + 8, {2}), f32(in, {2, 3})); }});
  m.push_back({"state: sum in f16", "softmax_state", "out_sum", [](float* out, float* in) {
                 smk::softmax_state(f32(out, {2}), typed(out + 8, DType::f16, {2}), f32(in, {2, 3})); }});
  m.push_back({"state: sum aliasing max", "softmax_state", "out_sum", [](float* out, float* in) {
                 smk::softmax_state(f32(out, {2}), f32(out, {2}), f32(in, {2, 3})); }});
  m.push_back({"state: bad temperature", "softmax_state", "options.temperature", [](float* out, float* in) {
                 smk::softmax_state(f32(out, {2}), f32(out + 8, {2}), f32(in, {2, 3}), with_temperature(0.0f)); }});

  using Bw = void (*)(const TensorView&, const TensorView&, const TensorView&, const SoftmaxOptions&, smk::Stream);
  const std::pair<const char*, Bw> backward_ops[] = {{"softmax_backward", &smk::softmax_backward},
                                                     {"log_softmax_backward", &smk::log_softmax_backward}};
  for (auto [op, fn] : backward_ops) {
    m.push_back({"dy of another shape", op, "dy", [fn](float* out, float* in) {
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), f32(in + 32, {3, 2}), {}, {}); }});
    m.push_back({"dy of another dtype", op, "dy", [fn](float* out, float* in) {
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), typed(in + 32, DType::bf16, {2, 3}), {}, {}); }});
    m.push_back({"dx of the wrong dtype", op, "dx", [fn](float* out, float* in) {
                   fn(typed(out, DType::f16, {2, 3}), f32(in, {2, 3}), f32(in + 32, {2, 3}), {}, {}); }});
    m.push_back({"null y", op, "y", [fn](float* out, float* in) {
                   fn(f32(out, {2, 3}), f32(nullptr, {2, 3}), f32(in + 32, {2, 3}), {}, {}); }});
    m.push_back({"dx partially overlapping dy", op, "dx", [fn](float*, float* in) {
                   fn(f32(in + 33, {2, 3}), f32(in, {2, 3}), f32(in + 32, {2, 3}), {}, {}); }});
    m.push_back({"bad temperature", op, "options.temperature", [fn](float* out, float* in) {
                   fn(f32(out, {2, 3}), f32(in, {2, 3}), f32(in + 32, {2, 3}), with_temperature(-1.0f), {}); }});
  }
  return m;
}

std::vector<Misuse> other_entry_points_misuse() {
  std::vector<Misuse> m;
  m.push_back({"matmul: a of rank 3", "matmul", "a", [](float* out, float* in) {
                 smk::matmul(f32(out, {2, 2}), f32(in, {1, 2, 3}), f32(in + 32, {3, 2})); }});
  m.push_back({"matmul: b in f16", "matmul", "b", [](float* out, float* in) {
                 smk::matmul(f32(out, {2, 2}), f32(in, {2, 3}), typed(in + 32, DType::f16, {3, 2})); }});
  m.push_back({"matmul: null b", "matmul", "b", [](float* out, float* in) {
                 smk::matmul(f32(out, {2, 2}), f32(in, {2, 3}), f32(nullptr, {3, 2})); }});
  m.push_back({"matmul: out overlapping a", "matmul", "out", [](float*, float* in) {
                 smk::matmul(f32(in + 1, {2, 2}), f32(in, {2, 3}), f32(in + 32, {3, 2})); }});
  m.push_back({"matvec: x of the wrong length", "matvec", "x", [](float* out, float* in) {
                 smk::matvec(f32(out, {2}), f32(in, {2, 3}), f32(in + 32, {2})); }});

  auto targets = [](float* in) { return TensorView::contiguous(in + 40, DType::i64, Device::cpu(), {2}); };
  m.push_back({"cross_entropy: targets in f32", "cross_entropy", "targets", [](float* out, float* in) {
                 smk::cross_entropy(f32(out, {}), f32(in, {2, 3}), f32(in + 40, {2})); }});
  m.push_back({"cross_entropy: logits of rank 1", "cross_entropy", "logits", [targets](float* out, float* in) {
                 smk::cross_entropy(f32(out, {}), f32(in, {6}), targets(in)); }});
  m.push_back({"cross_entropy: loss of the wrong shape", "cross_entropy", "loss", [targets](float* out, float* in) {
                 smk::CrossEntropyOptions o;
                 o.reduction = smk::Reduction::none;
                 smk::cross_entropy(f32(out, {3}), f32(in, {2, 3}), targets(in), o); }});
  m.push_back({"cross_entropy: label smoothing above 1", "cross_entropy", "options.label_smoothing",
               [targets](float* out, float* in) {
                 smk::CrossEntropyOptions o;
                 o.label_smoothing = 2.0f;
                 smk::cross_entropy(f32(out, {}), f32(in, {2, 3}), targets(in), o); }});
  m.push_back({"cross_entropy_backward: grad_logits too small", "cross_entropy_backward", "grad_logits",
               [targets](float* out, float* in) {
                 smk::cross_entropy_backward(f32(out, {2, 2}), f32(in, {2, 3}), targets(in), f32(in + 48, {})); }});

  m.push_back({"attention: q of rank 3", "attention_forward", "q", [](float* out, float* in) {
                 smk::attention_forward(f32(out, {1, 2, 1, 4}), f32(out + 16, {1, 1, 2}), f32(in, {2, 1, 4}),
                                        f32(in + 32, {1, 2, 1, 4}), f32(in + 48, {1, 2, 1, 4})); }});
  m.push_back({"merge: lse_a of the wrong shape", "merge_attention_states", "lse_a", [](float* out, float* in) {
                 smk::merge_attention_states(f32(out, {2, 4}), f32(out + 16, {2}), f32(in, {2, 4}), f32(in + 16, {3}),
                                             f32(in + 32, {2, 4}), f32(in + 48, {2})); }});
  return m;
}

TEST(Validation, EveryEntryPointRejectsEachMisuseByNameAndWritesNothing) {
  std::vector<Misuse> all = softmax_family_misuse();
  for (auto& c : other_entry_points_misuse()) all.push_back(c);
  for (const Misuse& c : all) {
    SCOPED_TRACE(std::string(c.op) + ": " + c.name);
    std::vector<float> in(256, 0.5f), out(256);
    for (int i = 0; i < 6; ++i) in[i] = static_cast<float>(i + 1);
    in[34] = 0.0f;
    for (int i = 40; i < 48; ++i) in[i] = 0.0f;
    std::memset(out.data(), 0x7f, out.size() * sizeof(float));
    const std::vector<float> in_before = in;
    const std::vector<float> out_before = out;
    try {
      c.call(out.data(), in.data());
      ADD_FAILURE() << "accepted";
    } catch (const smk::Error& e) {
      EXPECT_EQ(e.code(), smk::ErrorCode::invalid_argument) << e.what();
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(std::string(c.op) + ":", 0), 0u) << msg;
      EXPECT_NE(msg.find(std::string("argument '") + c.arg + "'"), std::string::npos) << msg;
    }
    EXPECT_EQ(std::memcmp(out.data(), out_before.data(), out.size() * sizeof(float)), 0) << "output was written";
    EXPECT_EQ(std::memcmp(in.data(), in_before.data(), in.size() * sizeof(float)), 0) << "an input was written";
  }
}

}  // namespace
