// The backward passes read twice (src/cuda/softmax/backward_reread.cu, mid9), on every block_per_row 16-bit
// softmax and log-softmax backward row of 4097..32768 (backward_reread.hpp's override; the dispatcher itself takes
// 16-bit log-softmax backward from 24576 and softmax backward from 28673, DispatcherRule; built for 16-bit rows alone
// since session 9's review, F17, softmax backward built again by mid11). Each case runs the public call (automatic
// path) with dx poisoned (0xFF) first, asserts that the re-read kernel served it, and checks every element
// against the float64 CPU reference with gpu_case.hpp's backward gates; the same rows strided and unaligned (y, dy and
// dx each off a 16-byte boundary: element-by-element loads and stores) must give the contiguous rows' bits (the sum's
// order is a function of n alone). Row lengths: the rule's ends, a ragged end, the 16-bit vectors' tail; bf16 (and
// bf16 → f32 dx), f16; per-row temperatures; many rows (more than two blocks an SM hold at once). f32 rows, even under
// the override, keep backward.cu's blocks, and a direct launch of them throws (OutsideTheBuild). Which form served
// (backward_reread.hpp backward_reread_last_form) is asserted where the form matters (session 12's review F4), and dx
// written over dy or over y (exact aliases the public calls allow) must give the out-of-place bits (F8).
//
// SMK_GPU_TEST_SMALL=1 (compute-sanitizer runs): fewer rows and lengths.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda/softmax/backward_reread.hpp"
#include "cuda/softmax/gpu_case.hpp"
#include "cuda/softmax/kernels.hpp"
#include "support/gpu.hpp"

namespace smk::gpu_test {
namespace {

namespace k = cuda::kernels;

constexpr int kForm7 = k::kRereadEvictLast | k::kRereadStreamOut | k::kRereadPairs;

// Every block_per_row 16-bit softmax and log-softmax backward row of 4097..32768 to the re-read kernel
// (backward_reread.hpp's override), put back after each test.
class GpuBackwardReread : public ::testing::Test {
 protected:
  void SetUp() override {
    SMK_REQUIRE_GPU();
    k::backward_reread_tuning().force = 1;
  }
  void TearDown() override {
    k::backward_reread_tuning().force = -1;
    k::backward_reread_tuning().form = -1;
  }
};

// Runs c through the dispatcher, asserts the re-read kernel served it and that every element is within its gate.
Result run_checked(const Case& c) {
  const std::uint64_t before = k::backward_reread_launch_count();
  Result r = run_gpu(c, cuda::SoftmaxPath::automatic);
  EXPECT_TRUE(r.ran) << r.reason;
  EXPECT_GT(k::backward_reread_launch_count(), before) << c.name << ": the re-read kernel did not serve";
  EXPECT_FALSE(r.stray_write) << c.name;
  EXPECT_EQ(check(c, r, reference(c)), 0) << c.name;
  return r;
}

TEST_F(GpuBackwardReread, SixteenBitAgainstReference) {
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  std::uint64_t seed = 9300;
  std::vector<std::int64_t> lengths = {4097, 8192, 12289, 16384, 30001, 32768};
  if (small_mode()) lengths = {4097, 30001};
  for (std::int64_t n : lengths)
    for (Op op : {Op::log_softmax_backward, Op::softmax_backward})
      for (DType t : {DType::bf16, DType::f16}) {
        // Many rows at the shortest and longest lengths (every block walks one row at a time; more rows than fit).
        const std::int64_t rows = small_mode() ? 3 : (n == 4097 || n == 32768 ? 2 * sms + 7 : 5);
        const std::string tag = std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(n) +
                                " " + op_name(op);
        SCOPED_TRACE(tag);
        const Case c = backward_case(tag, op, t, t, rows, n, ++seed);
        const Result a = run_checked(c);
        // Strided and unaligned: y and dy at a pitch of n + 1 from one element in, dx at n + 3 from one in.
        Case odd = c;
        odd.name = tag + " strided unaligned";
        odd.in.strides = {n + 1, 1};
        odd.in.offset = 1;
        odd.out.strides = {n + 3, 1};
        odd.out.offset = 1;
        const Result b = run_checked(odd);
        expect_same_bits(a, b, odd.name);
        if (t == DType::bf16) {  // dx in f32 from 16-bit y and dy
          Case f = c;
          f.name = tag + " to f32";
          f.out = contiguous(DType::f32, {rows, n});
          (void)run_checked(f);
        }
        if (t == DType::bf16 && rows <= 5) {  // per-row temperatures (not exact: the gate's 2u·|dx|)
          Case tc = backward_case(tag + " row temperatures", op, t, t, 3, n, ++seed);
          tc.row_temperature = {0.5, 3.0, 0.25};
          (void)run_checked(tc);
        }
      }
}

// mid12's form 7 (backward_reread.hpp kReread*: evict-last first loop, streaming dx, two vectors a step; the
// dispatcher's for log-softmax backward), and the default form, against form 0: the same arithmetic in the same order,
// so the same bits, on contiguous rows (the whole-vector loops the forms change) with a ragged end, the rule's ends
// and many rows; each also within the reference's gates.
// Form 7 is built for log-softmax backward with dx in the input's type only (session 12's review F5): softmax backward
// and a dx in f32 take form 0 whatever the form (the launch record says which served: backward_reread_last_form); a
// form not built throws smk::Error naming the op and "form".
TEST_F(GpuBackwardReread, FormsGiveTheSameBits) {
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  std::uint64_t seed = 9800;
  std::vector<std::int64_t> lengths = {4097, 12289, 24576, 30001, 32768};
  if (small_mode()) lengths = {4097, 30001};
  for (std::int64_t n : lengths)
    for (Op op : {Op::log_softmax_backward, Op::softmax_backward})
      for (DType t : {DType::bf16, DType::f16}) {
        const std::int64_t rows = small_mode() ? 3 : (n == 4097 || n == 32768 ? 2 * sms + 7 : 5);
        const std::string tag = std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(n) +
                                " " + op_name(op);
        SCOPED_TRACE(tag);
        const Case c = backward_case(tag, op, t, t, rows, n, ++seed);
        // Form 7 where built (log-softmax backward), else form 0.
        const int want = op == Op::log_softmax_backward ? kForm7 : 0;
        k::backward_reread_tuning().form = 0;
        const Result base = run_checked(c);
        EXPECT_EQ(k::backward_reread_last_form(), 0) << "form 0";
        k::backward_reread_tuning().form = kForm7;
        expect_same_bits(base, run_checked(c), tag + " form 7");
        EXPECT_EQ(k::backward_reread_last_form(), want) << "asked for form 7";
        k::backward_reread_tuning().form = -1;
        expect_same_bits(base, run_checked(c), tag + " default form");
        EXPECT_EQ(k::backward_reread_last_form(), want) << "default form";
      }
  // dx in f32 under a timed form: the default form's bits.
  const Case f = backward_case("bf16 3x30001 to f32", Op::log_softmax_backward, DType::bf16, DType::f32, 3, 30001, ++seed);
  k::backward_reread_tuning().form = -1;
  const Result fa = run_checked(f);
  EXPECT_EQ(k::backward_reread_last_form(), 0) << "bf16 to f32, default form";
  k::backward_reread_tuning().form = kForm7;
  expect_same_bits(fa, run_checked(f), "bf16 to f32 under form 7");
  EXPECT_EQ(k::backward_reread_last_form(), 0) << "bf16 to f32 under form 7";
  // A form not built (mid12's run timed 1, 3 and 4, removed since): smk::Error before any launch.
  k::backward_reread_tuning().form = k::kRereadPairs;
  k::RowProblem p;
  p.op = k::Op::softmax_backward;
  p.x_dtype = p.out_dtype = DType::bf16;
  p.rows = 1;
  p.n = 8192;
  p.step[k::kX] = p.step[k::kDy] = p.step[k::kOut] = 1;
  const std::uint64_t before = k::backward_reread_launch_count();
  try {
    k::launch_backward_reread_rows(p, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const smk::Error& e) {
    EXPECT_EQ(e.code(), smk::ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("softmax_backward"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("form"), std::string::npos) << e.what();
  }
  EXPECT_EQ(k::backward_reread_launch_count(), before) << "launched";
  k::backward_reread_tuning().form = -1;
}

// In place under form 7 (session 12's review F8; its second loop stores dx streaming where it has just loaded y and
// dy): 16-bit log-softmax backward, the dispatcher's default form, dx written over dy and over y, each within the
// float64 reference's gates and bitwise the out-of-place call's dx; a ragged end (30001) and the rule's end (32768,
// whole vectors only). Softmax backward (form 0) in place too.
TEST_F(GpuBackwardReread, InPlaceUnderForm7) {
  std::uint64_t seed = 9900;
  struct Shape {
    DType t;
    Op op;
    std::int64_t rows, n;
  };
  std::vector<Shape> shapes = {{DType::bf16, Op::log_softmax_backward, 5, 30001},
                               {DType::f16, Op::log_softmax_backward, 5, 30001},
                               {DType::bf16, Op::softmax_backward, 5, 30001}};
  if (!small_mode()) shapes.push_back({DType::bf16, Op::log_softmax_backward, 7, 32768});
  for (const Shape& sh : shapes) {
    const std::string tag = std::string(dtype_name(sh.t)) + " " + std::to_string(sh.rows) + "x" +
                            std::to_string(sh.n) + " " + op_name(sh.op);
    SCOPED_TRACE(tag);
    const int want = sh.op == Op::log_softmax_backward ? kForm7 : 0;
    const Case c = backward_case(tag, sh.op, sh.t, sh.t, sh.rows, sh.n, ++seed);
    const Result base = run_checked(c);
    EXPECT_EQ(k::backward_reread_last_form(), want) << "out of place";
    Case over_dy = c;
    over_dy.name = tag + " dx over dy";
    over_dy.in_place = true;
    expect_same_bits(base, run_checked(over_dy), over_dy.name);
    EXPECT_EQ(k::backward_reread_last_form(), want) << over_dy.name;
    Case over_y = c;
    over_y.name = tag + " dx over y";
    over_y.in_place = true;  // check(): dx in y's dtype
    const std::uint64_t before = k::backward_reread_launch_count();
    const Result r = run_over_y(over_y);
    EXPECT_GT(k::backward_reread_launch_count(), before) << over_y.name << ": the re-read kernel did not serve";
    EXPECT_EQ(k::backward_reread_last_form(), want) << over_y.name;
    EXPECT_EQ(check(over_y, r, reference(over_y)), 0) << over_y.name;
    expect_same_bits(base, r, over_y.name);
  }
}

// Outside what the kernel is built for: under the override, f32 rows keep backward.cu's blocks (the re-read kernel
// does not run; the result within the gates), and the launcher called directly with them throws smk::Error naming
// the op (unsupported), launching nothing.
TEST_F(GpuBackwardReread, OutsideTheBuild) {
  std::uint64_t seed = 9700;
  struct Other {
    DType t;
    Op op;
  };
  for (const Other& o : {Other{DType::f32, Op::log_softmax_backward}, Other{DType::f32, Op::softmax_backward}}) {
    const std::string tag = std::string(dtype_name(o.t)) + " 3x8192 " + op_name(o.op);
    SCOPED_TRACE(tag);
    const Case c = backward_case(tag, o.op, o.t, o.t, 3, 8192, ++seed);
    const std::uint64_t before = k::backward_reread_launch_count();
    const Result r = run_gpu(c, cuda::SoftmaxPath::automatic);
    ASSERT_TRUE(r.ran) << r.reason;
    EXPECT_EQ(k::backward_reread_launch_count(), before) << "the re-read kernel ran";
    EXPECT_EQ(check(c, r, reference(c)), 0);
    k::RowProblem p;
    p.op = o.op == Op::softmax_backward ? k::Op::softmax_backward : k::Op::log_softmax_backward;
    p.x_dtype = p.out_dtype = o.t;
    p.rows = 1;
    p.n = 8192;
    p.step[k::kX] = p.step[k::kDy] = p.step[k::kOut] = 1;
    try {
      k::launch_backward_reread_rows(p, nullptr);  // null pointers: it must refuse before any launch
      ADD_FAILURE() << "no error";
    } catch (const smk::Error& e) {
      EXPECT_EQ(e.code(), smk::ErrorCode::unsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find(op_name(o.op)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("16-bit"), std::string::npos) << e.what();
    }
    EXPECT_EQ(k::backward_reread_launch_count(), before) << "launched";
  }
}

// The dispatcher's own rule (softmax_cuda.cpp backward_reread_takes, mid11's): 16-bit log-softmax backward rows of
// 24576..32768 and softmax backward rows of 28673..32768 take the re-read kernel; 24575, 28672 (softmax backward)
// and f32 rows do not. Against the reference too. The form it takes there (backward_reread.cu reread_default_form,
// session 12's review F4): 7 for log-softmax backward with dx in the input's type, 0 for softmax backward and for a
// dx in f32 (bf16 / f16 → f32 at the same bounds).
TEST(GpuBackwardRereadRule, DispatcherRule) {
  SMK_REQUIRE_GPU();
  ASSERT_EQ(k::backward_reread_tuning().force, -1);
  std::uint64_t seed = 9500;
  ASSERT_EQ(k::backward_reread_tuning().form, -1);
  struct Want {
    DType t;
    Op op;
    std::int64_t n;
    bool reread;
    int form = 0;         // the form it takes, where reread
    bool dx_f32 = false;  // dx in f32 (else in the input's type)
  };
  const Op lsm = Op::log_softmax_backward, sm = Op::softmax_backward;
  for (const Want& w : {Want{DType::bf16, lsm, 24576, true, kForm7}, Want{DType::f16, lsm, 24576, true, kForm7},
                        Want{DType::bf16, lsm, 32768, true, kForm7}, Want{DType::f16, lsm, 32768, true, kForm7},
                        Want{DType::bf16, lsm, 24575, false}, Want{DType::bf16, sm, 28673, true, 0},
                        Want{DType::f16, sm, 28673, true, 0}, Want{DType::f16, sm, 32768, true, 0},
                        Want{DType::bf16, sm, 28672, false}, Want{DType::bf16, lsm, 24576, true, 0, true},
                        Want{DType::f16, lsm, 32768, true, 0, true},
                        Want{DType::bf16, sm, 28673, true, 0, true},
                        Want{DType::f32, sm, 32000, false}, Want{DType::f32, lsm, 32000, false}}) {
    const DType out = w.dx_f32 ? DType::f32 : w.t;
    const std::string tag = std::string(dtype_name(w.t)) + (w.dx_f32 ? " to f32" : "") + " 3x" +
                            std::to_string(w.n) + " " + op_name(w.op);
    SCOPED_TRACE(tag);
    const Case c = backward_case(tag, w.op, w.t, out, 3, w.n, ++seed);
    const std::uint64_t before = k::backward_reread_launch_count();
    const Result r = run_gpu(c, cuda::SoftmaxPath::automatic);
    ASSERT_TRUE(r.ran) << r.reason;
    EXPECT_EQ(k::backward_reread_launch_count() > before, w.reread) << "re-read kernel ran";
    if (w.reread) EXPECT_EQ(k::backward_reread_last_form(), w.form) << "the dispatcher's form";
    EXPECT_EQ(check(c, r, reference(c)), 0);
  }
}

}  // namespace
}  // namespace smk::gpu_test
