// accuracy_report: the table of docs/accuracy.md — max and median error in ulps of the output type, per op, dtype
// and row length, on random logits (normal, σ = 4, fixed seeds), against the long-double oracle of numerics.hpp.
//
//   accuracy_report [--gpu] [--backend NAME]... [--out FILE] [--dump DIR]
//     default backend: cpu_float (the CPU float path); --gpu adds every GPU kernel path (CUDA build with a GPU).
//     --dump DIR writes each input and the first backend's outputs as .npy files for tests/conformance/vs_torch.py.
// scripts/accuracy.sh runs it for docs/accuracy.md; scripts/device.sh's `accuracy` step runs it with --gpu.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "conformance/harness.hpp"
#include "softmaxkit/core/error.hpp"

using namespace smk;
using namespace smk::conformance;

namespace {

constexpr std::int64_t kLengths[] = {1, 7, 32, 128, 1000, 4096, 32768, 151936};
constexpr std::int64_t kElementsPerConfig = std::int64_t{1} << 20;

struct Stats {
  double max_ulp = 0, median_ulp = 0, max_gate = 0;
  std::int64_t count = 0;
};

// Writes a C-order .npy file of `rows × n` elements stored as `t` (bf16 as its uint16 bit pattern).
void write_npy(const std::string& path, DType t, std::int64_t rows, std::int64_t n, const unsigned char* data) {
  const char* descr = t == DType::f32 ? "<f4" : t == DType::f16 ? "<f2" : "<u2";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(n) + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  f.put(static_cast<char>(len & 0xff)).put(static_cast<char>(len >> 8));
  f << header;
  f.write(reinterpret_cast<const char*>(data), rows * n * static_cast<std::int64_t>(dtype_size(t)));
}

Stats measure(const Backend& b, const Problem& p, const RunResult& r) {
  std::vector<double> ulps;
  Stats s;
  const std::int64_t n = p.in.shape[1];
  const bool in16 = p.in.dtype == DType::bf16 || p.in.dtype == DType::f16;  // numerics.hpp kLogTermProductU
  for (std::int64_t row = 0; row < row_count(p); ++row) {
    const std::vector<double> x = row_values(p, row);
    const ExactRow e = exact_row(x.data(), n);
    const std::vector<double> y = row_output(p, r, row);
    for (std::size_t i = 0; i < y.size(); ++i) {
      long double exact;
      double gate;
      if (p.op == Op::logsumexp) {
        exact = e.lse;
        gate = lse_gate(n, b.sum_model, exact, in16);
      } else if (p.op == Op::softmax) {
        exact = e.softmax(x[i]);
        const double rel = p.out.dtype == DType::f32 ? softmax_gate(n, b.sum_model)
                                                     : softmax_gate_16bit(n, b.sum_model, exact);  // numerics.hpp
        gate = rel * static_cast<double>(std::max<long double>(exact, kSoftmaxRelativeFloor));
      } else {
        exact = e.log_softmax(x[i]);
        gate = log_softmax_gate(n, b.sum_model, exact, in16);
      }
      const double err = static_cast<double>(std::fabs(y[i] - exact));
      ulps.push_back(static_cast<double>(err / ulp_of(p.out.dtype, exact)));
      if (p.out.dtype == DType::f32) {
        s.max_gate = std::max(s.max_gate, err / gate);
      } else {  // the 16-bit gate: 1 ulp from the correctly rounded result, or the f32 bound plus half an ulp
        const double dist = static_cast<double>(ulp_distance(p.out.dtype, y[i], static_cast<double>(round_to(p.out.dtype, exact))));
        const double wide = err / (gate + static_cast<double>(ulp_of(p.out.dtype, exact) / 2));
        s.max_gate = std::max(s.max_gate, std::min(dist, wide));
      }
    }
  }
  s.count = static_cast<std::int64_t>(ulps.size());
  if (ulps.empty()) return s;
  s.max_ulp = *std::max_element(ulps.begin(), ulps.end());
  std::nth_element(ulps.begin(), ulps.begin() + ulps.size() / 2, ulps.end());
  s.median_ulp = ulps[ulps.size() / 2];
  return s;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> names;
  bool gpu = false;
  std::string out_path, dump_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gpu") gpu = true;
    else if (a == "--backend" && i + 1 < argc) names.push_back(argv[++i]);
    else if (a == "--out" && i + 1 < argc) out_path = argv[++i];
    else if (a == "--dump" && i + 1 < argc) dump_dir = argv[++i];
    else {
      std::cerr << "usage: accuracy_report [--gpu] [--backend NAME]... [--out FILE] [--dump DIR]\n";
      return 2;
    }
  }
  std::vector<Backend> all = cpu_backends();
  for (const Backend& b : gpu_backends()) all.push_back(b);
  std::vector<Backend> chosen;
  if (names.empty() && !gpu) names.push_back("cpu_float");
  for (const std::string& name : names) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Backend& b) { return b.name == name; });
    if (it == all.end()) {
      std::cerr << "accuracy_report: unknown backend '" << name << "'; known:";
      for (const Backend& b : all) std::cerr << " " << b.name;
      std::cerr << "\n";
      return 2;
    }
    chosen.push_back(*it);
  }
  if (gpu) {
    const std::vector<Backend> g = gpu_backends();
    if (g.empty() || !backend_unavailable_reason(g.front()).empty()) {
      std::cerr << "accuracy_report: --gpu: " << (g.empty() ? "this build has no CUDA backend" : backend_unavailable_reason(g.front())) << "\n";
      return 3;
    }
    chosen.insert(chosen.end(), g.begin(), g.end());
  }

  std::ostringstream md;
  md << "| backend | op | dtype | n | rows | max ulp | median ulp | max error / gate |\n"
     << "|---|---|---|---|---|---|---|---|\n";
  bool all_within_gate = true;
  for (const Backend& b : chosen)
    for (Op op : kAllOps)
      for (DType t : {DType::f32, DType::f16, DType::bf16})
        for (std::int64_t n : kLengths) {
          const std::int64_t rows = std::max<std::int64_t>(1, std::min<std::int64_t>(1024, kElementsPerConfig / n));
          std::mt19937_64 rng(1000 + static_cast<std::uint64_t>(n) * 7 + static_cast<int>(t));
          std::normal_distribution<double> d(0, 4);
          std::vector<double> v(static_cast<std::size_t>(rows * n));
          for (auto& x : v) x = d(rng);
          Spec s = spec("accuracy", t, {rows, n}, v);
          const Problem p = make_problem(s, op);
          RunResult r;
          try {
            r = run(b, p, 0xFF);
          } catch (const Error& e) {
            std::cerr << b.name << " " << op_name(op) << " " << dtype_name(t) << " n=" << n << ": " << e.what() << "\n";
            return 1;
          }
          md << "| " << b.name << " | " << op_name(op) << " | " << dtype_name(t) << "→" << dtype_name(p.out.dtype)
             << " | " << n << " | " << rows << " | ";
          if (!r.applicable) {
            md << "n/a | n/a | not served by this path |\n";
            continue;
          }
          const Stats st = measure(b, p, r);
          if (st.max_gate > 1) all_within_gate = false;
          md << fixed(st.max_ulp, 2) << " | " << fixed(st.median_ulp, 3) << " | "
             << fixed(st.max_gate, 3) << " |\n";
          if (!dump_dir.empty() && &b == &chosen.front()) {
            const std::string stem = dump_dir + "/" + dtype_name(t) + "_" + std::to_string(n);
            if (op == Op::softmax) write_npy(stem + "_in.npy", t, rows, n, p.in_bytes.data());
            const std::int64_t cols = op == Op::logsumexp ? 1 : n;
            write_npy(stem + "_" + op_name(op) + ".npy", p.out.dtype, rows, cols, r.out_bytes.data());
          }
          std::cerr << "." << std::flush;
        }
  std::cerr << "\n";
  if (out_path.empty()) std::cout << md.str();
  else std::ofstream(out_path) << md.str();
  if (!all_within_gate) {
    std::cerr << "accuracy_report: some output exceeded its gate (max error / gate > 1)\n";
    return 1;
  }
  return 0;
}
