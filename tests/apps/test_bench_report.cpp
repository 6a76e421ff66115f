// Tests of `softmaxkit bench`'s renderings and headline checks, on hand-made results whose bandwidths are worked
// out by hand (bytes / µs / 1000 = GB/s).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench_report.hpp"

namespace smk::app::bench {
namespace {

Result make(Op op, DType dtype, std::int64_t rows, std::int64_t cols, double median_us, const char* name) {
  Result r;
  r.op = op;
  r.dtype = dtype;
  r.shape = {name, "issue", rows, cols, ""};
  r.bytes = min_traffic_bytes(op, dtype, rows, cols);
  r.micros = summarize({median_us, median_us, median_us});
  return r;
}

// Every field, empty ones included (a CSV row may end in empty fields: the fixed-cost columns when not measured).
std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out(1);
  for (char ch : line) {
    if (ch == sep) out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

RunInfo info_with(double copy, double read) {
  RunInfo info;
  info.device_name = "test device";
  info.ceilings.copy_gbps = copy;
  info.ceilings.read_gbps = read;
  return info;
}

TEST(BenchReport, CsvRowCarriesTheDerivedBandwidth) {
  // (4096, 16384) f32 softmax: 2 × 67,108,864 × 4 = 536,870,912 bytes in 134.217728 µs = 4000 GB/s.
  const Result r = make(Op::softmax, DType::f32, 4096, 16384, 134.217728, "rows-16384");
  Ceilings c;
  c.copy_gbps = 4000.0;
  c.read_gbps = 5000.0;
  const std::vector<std::string> header = split(csv_header(), ',');
  const std::vector<std::string> row = split(csv_row(r, c), ',');
  ASSERT_EQ(header.size(), 18u);
  ASSERT_EQ(row.size(), header.size());
  auto field = [&](const char* name) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return row[i];
    return std::string("<missing>");
  };
  EXPECT_EQ(field("op"), "softmax");
  EXPECT_EQ(field("dtype"), "f32");
  EXPECT_EQ(field("rows"), "4096");
  EXPECT_EQ(field("cols"), "16384");
  EXPECT_EQ(field("bytes"), "536870912");
  EXPECT_EQ(field("gbps"), "4000.00");
  EXPECT_EQ(field("pct_copy"), "100.00");
  EXPECT_EQ(field("pct_read"), "80.00");
  EXPECT_EQ(field("reps"), "3");
  // The table row shows the same figures.
  const std::string t = table_row(r, c);
  EXPECT_NE(t.find("4000.0"), std::string::npos) << t;
  EXPECT_NE(t.find("100.0%"), std::string::npos) << t;
}

TEST(BenchReport, FixedCostColumnsShowWhatWasMeasured) {
  Result r = make(Op::softmax, DType::f32, 1, 151936, 10.0, "one-row-151936");
  Ceilings c;
  c.copy_gbps = 4000.0;
  c.read_gbps = 5000.0;
  const std::vector<std::string> header = split(csv_header(), ',');
  auto field = [&](const Result& x, const char* name) {
    const std::vector<std::string> row = split(csv_row(x, c), ',');
    for (std::size_t i = 0; i < header.size() && i < row.size(); ++i)
      if (header[i] == name) return row[i];
    return std::string("<missing>");
  };
  // Not measured: empty CSV fields, absent JSON keys.
  EXPECT_EQ(field(r, "host_us"), "");
  EXPECT_EQ(field(r, "graph_us"), "");
  EXPECT_FALSE(to_json(info_with(4000.0, 5000.0), {r}).at("results")[0].contains("host_us"));
  r.host_us = 3.25;
  r.loop_us = 7.5;
  r.graph_us = 2.125;
  EXPECT_EQ(field(r, "host_us"), "3.250");
  EXPECT_EQ(field(r, "loop_us"), "7.500");
  EXPECT_EQ(field(r, "graph_us"), "2.125");
  const auto j = to_json(info_with(4000.0, 5000.0), {r}).at("results")[0];
  EXPECT_DOUBLE_EQ(j.at("host_us").get<double>(), 3.25);
  EXPECT_DOUBLE_EQ(j.at("graph_us").get<double>(), 2.125);
  const std::string t = table_row(r, c);
  EXPECT_NE(t.find("3.25"), std::string::npos) << t;
  EXPECT_NE(t.find("7.50"), std::string::npos) << t;
}

TEST(BenchReport, JsonKeepsUntimedRowsWithTheirReason) {
  RunInfo info = info_with(4000.0, 4200.0);
  Result ok = make(Op::logsumexp, DType::bf16, 1, 16777216, 10.0, "one-row-16M");
  Result refused = make(Op::softmax, DType::bf16, 1, 16777216, 1.0, "one-row-16M");
  refused.status = "unsupported";
  refused.path = "warp_per_row";
  refused.reason = "softmax: kernel path 'warp_per_row' cannot serve rows of 16777216";
  const nlohmann::json j = to_json(info, {ok, refused});
  ASSERT_EQ(j.at("results").size(), 2u);
  const auto& a = j.at("results")[0];
  EXPECT_EQ(a.at("status"), "ok");
  EXPECT_EQ(a.at("bytes"), 33554432);
  EXPECT_NEAR(a.at("gbps").get<double>(), 3355.4432, 1e-9);  // 33,554,432 bytes in 10 µs
  EXPECT_NEAR(a.at("pct_read").get<double>(), 79.891504762, 1e-6);  // 3355.4432 / 4200
  const auto& b = j.at("results")[1];
  EXPECT_EQ(b.at("status"), "unsupported");
  EXPECT_EQ(b.at("path"), "warp_per_row");
  EXPECT_FALSE(b.contains("median_us"));
  EXPECT_NE(b.at("reason").get<std::string>().find("cannot serve"), std::string::npos);
  EXPECT_EQ(j.at("run").at("ceilings").at("copy_gbps"), 4000.0);
  EXPECT_EQ(j.at("schema"), 1);
}

TEST(BenchReport, HeadlinesCheckTheTargets) {
  const RunInfo info = info_with(4000.0, 4000.0);
  std::vector<Result> rs;
  // f32 softmax: (4096, 151936) moves 4,978,638,848 bytes; in 1380 µs that is 3607.7 GB/s = 90.2 % of copy.
  rs.push_back(make(Op::softmax, DType::f32, 4096, 151936, 1380.0, "qwen-vocab-4096"));
  // (32768, 1024): 268,435,456 bytes in 80 µs = 3355.4 GB/s = 83.9 %: the worst shape, under 90 %.
  rs.push_back(make(Op::softmax, DType::f32, 32768, 1024, 80.0, "rows-1024"));
  // (1, 151936) moves 1.2 MB, under the 64 MB floor: judged by time only, 6 µs <= 8.
  rs.push_back(make(Op::softmax, DType::f32, 1, 151936, 6.0, "qwen-vocab-1"));
  // (1, 16777216): 134,217,728 bytes in 38 µs = 3532 GB/s >= 3000 (88.3 %, above the worst shape).
  rs.push_back(make(Op::softmax, DType::f32, 1, 16777216, 38.0, "one-row-16M"));
  // A forced path and a cuDNN row are not the library's automatic choice: they must not count.
  Result forced = make(Op::softmax, DType::f32, 16384, 4096, 10000.0, "rows-4096");
  forced.path = "block_per_row";
  rs.push_back(forced);
  Result anchor = make(Op::softmax, DType::f32, 16384, 4096, 10000.0, "rows-4096");
  anchor.impl = "cudnn";
  rs.push_back(anchor);
  // bf16 logsumexp: (4096, 151936) reads 1,244,659,712 bytes; in 320 µs that is 3889.6 GB/s = 97.2 % of read.
  rs.push_back(make(Op::logsumexp, DType::bf16, 4096, 151936, 320.0, "qwen-vocab-4096"));
  // f32 softmax backward at 85.3 %: (8192, 32000) moves 3,145,728,000 bytes in 922 µs = 3411.8 GB/s.
  rs.push_back(make(Op::softmax_backward, DType::f32, 8192, 32000, 922.0, "llama2-vocab-8192"));
  // A 32 × 128256 row at 9 µs misses the 8 µs target.
  rs.push_back(make(Op::softmax_backward, DType::f32, 32, 128256, 9.0, "llama3-vocab-32"));

  const std::vector<std::string> lines = headline_lines(info, rs);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].rfind("headline f32  softmax", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("worst 83.9% of copy (rows-1024)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("[>= 90%: MISSED]"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("1x151936 6.0 us [<= 8: met]"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("1x16777216 3532 GB/s [>= 3000: met]"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("logsumexp"), std::string::npos);
  EXPECT_NE(lines[1].find("worst 97.2% of read"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("[>= 90%: met]"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("worst 85.3% of copy"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("[>= 85%: met]"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("32x128256 9.0 us [<= 8: MISSED]"), std::string::npos) << lines[2];
}

TEST(BenchReport, CeilingsLine) {
  Ceilings c;
  c.copy_gbps = 4270.4;
  c.copy_bytes = std::int64_t{2} << 30;
  c.read_gbps = 4301.0;
  c.read_bytes = std::int64_t{2} << 30;
  EXPECT_EQ(ceilings_line(c), "headline ceilings: copy 4270 GB/s (cudaMemcpy of 2.0 GiB, read + written), "
                              "read 4301 GB/s (CUB max over 2.0 GiB)");
}

}  // namespace
}  // namespace smk::app::bench
