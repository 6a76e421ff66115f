// The conformance suite's fixture, parameterized by backend (harness.hpp). Shared by the test cases
// (test_conformance.cpp) and the files that instantiate them for the CPU and the GPU backends.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "conformance/harness.hpp"

namespace smk::conformance {

// Every run is made twice, with two output poisons: NaN in every float type, and a finite value (1.5e13 in f32,
// 85.3 in f16), so an unwritten element shows whatever the row's expected regime.
inline constexpr unsigned char kPoisons[] = {0xFF, 0x55};

class Conformance : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    const std::string why = backend_unavailable_reason(GetParam());
    if (!why.empty()) GTEST_SKIP() << why;
  }

  // Runs `s` for `op` with each poison; checks the contract; returns the last run (nullopt-like: applicable=false).
  // Runs `s` for `op` with each poison: the first run is checked against the contract, the second must leave its
  // own poison outside the view and reproduce the first run's outputs bit for bit. Returns the first run
  // (applicable = false when the backend refused the case as unsupported).
  RunResult run_checked(const Spec& s, Op op) {
    const Problem p = make_problem(s, op);
    const RunResult first = run(GetParam(), p, kPoisons[0]);
    if (!first.applicable) {
      note_not_applicable(s.name + " / " + op_name(op), first.reason);
      return first;
    }
    const std::string what = s.name + " / " + op_name(op) + " / " + dtype_name(s.dtype) + "->" + dtype_name(p.out.dtype);
    const Verdict v = check(p, first, GetParam(), kPoisons[0]);
    EXPECT_TRUE(v.ok()) << what << ": " << v.summary();
    const RunResult second = run(GetParam(), p, kPoisons[1]);
    EXPECT_TRUE(second.applicable) << what << ": refused on the second run: " << second.reason;
    if (second.applicable) {
      const Verdict v2 = check_same_outputs(p, first, second, kPoisons[1]);
      EXPECT_TRUE(v2.ok()) << what << " (second poison): " << v2.summary();
    }
    ++applicable_;
    return first;
  }

  void expect_conforms(const std::vector<Spec>& specs, std::initializer_list<Op> ops = {Op::softmax, Op::log_softmax,
                                                                                         Op::logsumexp}) {
    for (const Spec& s : specs)
      for (Op op : ops) {
        if (op != Op::logsumexp && s.in_place && s.out_dtype != s.dtype) continue;
        run_checked(s, op);
      }
  }

  void note_not_applicable(const std::string& what, const std::string& reason) {
    if (not_applicable_++ == 0) first_reason_ = what + ": " + reason;
  }

  // Ends a test: says how many cases this backend could not serve, and skips a test none of whose cases applied.
  void finish() {
    if (not_applicable_ > 0) {
      std::cout << "[ N/A      ] " << not_applicable_ << " case(s) not applicable on " << GetParam().name
                << " (first: " << first_reason_ << ")\n";
      RecordProperty("not_applicable", not_applicable_);
    }
    if (applicable_ == 0 && not_applicable_ > 0)
      GTEST_SKIP() << "no case of this test applies to " << GetParam().name << ": " << first_reason_;
  }

  int applicable_ = 0, not_applicable_ = 0;
  std::string first_reason_;
};

}  // namespace smk::conformance
