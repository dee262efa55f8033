// console_table_test.cpp — the human summary: header, aligned epoch table, verdict, failure line.
#include "report/console_table.h"

#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "sample_result.h"

namespace kv {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::string render(const RunResult& r, ConsoleStyle style = {}) {
  std::ostringstream os;
  print_run(os, r, style);
  return os.str();
}

// Column c of an aligned line ends at the same offset on every line: right alignment means the
// last character of each header word sits above the last character of each value.
std::vector<size_t> column_ends(const std::string& line) {
  std::vector<size_t> ends;
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] != ' ' && (i + 1 == line.size() || (line[i + 1] == ' ' && i + 2 < line.size() &&
                                                    line[i + 2] == ' ')))
      ends.push_back(i);
  return ends;
}

TEST(ConsoleTable, HeaderNamesScenarioDeviceSeedRegressions) {
  const std::string out = render(test::sample_result());
  auto lines = lines_of(out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "scenario: sample (scenarios/sample.json)");
  EXPECT_NE(lines[1].find("device: host"), std::string::npos);
  EXPECT_NE(lines[1].find("seed: 1234567890123"), std::string::npos);
  EXPECT_NE(lines[1].find("regressions: new-blocks-not-zeroed, padded-rows-in-reduction"),
            std::string::npos);

  RunResult none = test::sample_result();
  none.regressions.clear();
  EXPECT_NE(render(none).find("regressions: none"), std::string::npos);
}

TEST(ConsoleTable, OnTheCudaDeviceTheHeaderNamesTheGpuAndDriver) {
  EXPECT_EQ(render(test::sample_result()).find("gpu:"), std::string::npos) << "host: no GPU line";
  RunResult r = test::sample_result();
  r.device = "cuda";
  r.device_info->kind = "cuda";
  r.device_info->gpu = test::sample_gpu();
  const auto lines = lines_of(render(r));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[2], "gpu: NVIDIA H100 80GB HBM3 (cc 9.0, 132 SMs, 79.2 GiB)   driver 580.159.04 "
                      "(CUDA 13.1), runtime 13.0");
  r.device_info->gpu->nvidia_driver_version.reset();
  EXPECT_NE(render(r).find("driver unknown (CUDA 13.1)"), std::string::npos);
}

TEST(ConsoleTable, AlignsColumnsWithLongNumbers) {
  RunResult r = test::sample_result();  // epoch 2 has 12-digit non-finite count and a nan
  r.epochs[1].steps = 1234567;
  r.epochs[1].seconds = 123.456;
  const auto lines = lines_of(render(r));
  size_t header = 0;
  while (header < lines.size() && lines[header].find("epoch") == std::string::npos) ++header;
  ASSERT_LT(header + 2, lines.size());
  const auto want = column_ends(lines[header]);
  ASSERT_EQ(want.size(), 8u) << lines[header];
  for (size_t i = 1; i <= 2; ++i) {
    EXPECT_EQ(lines[header + i].size(), lines[header].size()) << lines[header + i];
    EXPECT_EQ(column_ends(lines[header + i]), want) << lines[header] << "\n" << lines[header + i];
  }
  EXPECT_NE(lines[header + 2].find("123456789012"), std::string::npos);
  EXPECT_NE(lines[header + 2].find("1234567"), std::string::npos);
  EXPECT_NE(lines[header + 2].find("nan"), std::string::npos);
  EXPECT_NE(lines[header + 2].find("37.5%"), std::string::npos);
  EXPECT_NE(lines[header + 1].find(" - "), std::string::npos) << "no first bad step: a dash";
}

TEST(ConsoleTable, PrintAlignedRightAligns) {
  std::ostringstream os;
  print_aligned(os, {"a", "bbb"}, {{"12345", "1"}, {"1", "22"}}, 0);
  EXPECT_EQ(os.str(), "    a  bbb\n12345    1\n    1   22\n");
}

TEST(ConsoleTable, VerdictLineOkAndMismatch) {
  RunResult r = test::sample_result();
  EXPECT_EQ(verdict_line(r, {}), "verdict: corrupt (expected corrupt) — OK");
  r.expected = Expectation::clean;
  EXPECT_EQ(verdict_line(r, {}), "verdict: corrupt (expected clean) — MISMATCH");
  r.verdict = Verdict::clean;
  r.expected = Expectation::corrupt;
  EXPECT_EQ(verdict_line(r, {}), "verdict: clean (expected corrupt) — MISMATCH");
}

TEST(ConsoleTable, ColourOnlyWhenAsked) {
  RunResult r = test::sample_result();
  EXPECT_EQ(render(r).find("\x1b["), std::string::npos);
  EXPECT_NE(render(r, ConsoleStyle{true}).find("\x1b[1;32m"), std::string::npos);  // OK: green
  r.expected = Expectation::clean;
  EXPECT_NE(render(r, ConsoleStyle{true}).find("\x1b[1;31m"), std::string::npos);  // red
}

TEST(ConsoleTable, StringStreamsAreNeverTerminals) {
  std::ostringstream os;
  EXPECT_FALSE(console_style_for(os).colour);
}

TEST(ConsoleTable, FailureLineNamesWhereAndWhat) {
  const std::string line = failure_line(*test::sample_result().first_failure);
  for (const char* part : {"epoch 2", "step 7", "request 3", "position 17", "layer 0", "head 1",
                           "site decode (ops fill_blocks, write_kv, paged_decode)", "check nonfinite", "value nan", "padded"})
    EXPECT_NE(line.find(part), std::string::npos) << part << " missing from: " << line;

  Failure f = *test::sample_result().first_failure;
  f.layer = -1;
  f.head = -1;
  f.value = 0.5;
  const std::string token = failure_line(f);
  EXPECT_NE(token.find("layer -, head -"), std::string::npos) << token;
  EXPECT_NE(token.find("value 5.00e-01 (tolerance 2.00e-02)"), std::string::npos) << token;

  f.tolerance = 0.0;  // a non-finite check
  EXPECT_EQ(failure_line(f).find("tolerance"), std::string::npos) << failure_line(f);
}

TEST(ConsoleTable, FailureShownOnlyWhenThereIsOne) {
  RunResult r = test::sample_result();
  EXPECT_NE(render(r).find("first failure:"), std::string::npos);
  EXPECT_NE(render(r).find("row 3 of a replay padded to 4"), std::string::npos);
  r.first_failure.reset();
  EXPECT_EQ(render(r).find("first failure:"), std::string::npos);
}

TEST(ConsoleTable, SampledReferenceIsOneLineUnderTheHeader) {
  RunResult r = test::sample_result();
  EXPECT_EQ(render(r).find("reference:"), std::string::npos) << "nothing extra in full mode";
  r.reference_mode = ReferenceMode::sampled;
  r.reference_sampled_requests = 4;
  const auto lines = lines_of(render(r));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[2], "reference: sampled, 4 requests per epoch");
}

TEST(ConsoleTable, ReportsTheZeroInitCostOnlyWhenTheMitigationRan) {
  RunResult r = test::sample_result();
  EXPECT_EQ(render(r).find("zero-init"), std::string::npos);
  r.epochs[1].zero_init_seconds = 0.000041;  // 41 steps: 1 us/step of a 148.8 us/step forward
  r.epochs[1].forward_seconds = 0.0061;
  const std::string out = render(r);
  EXPECT_NE(out.find("zero-init outputs, epoch 2: the memsets take 1.0 us/step of a 148.8 us/step "
                     "forward (0.7%)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("zero-init outputs, epoch 1"), std::string::npos);
}

TEST(ConsoleTable, AnErrorVerdictSaysWhatFailedWhereWithoutAnExpectation) {
  RunResult r = test::sample_result();
  r.verdict = Verdict::error;
  r.epochs.clear();
  r.first_failure.reset();
  r.error = RunError{.kind = RunErrorKind::hang, .op = "paged_decode", .epoch = 1, .step = 3,
                     .layer = 0, .layer_kind = "attention", .signal = "",
                     .exit_code = 0,
                     .message = "backend op paged_decode did not return within 2 s at epoch 1, "
                                "step 3 (killed)"};
  const std::string text = render(r);
  EXPECT_NE(text.find("verdict: error — backend op paged_decode did not return within 2 s at "
                      "epoch 1, step 3 (killed)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("epoch  requests"), std::string::npos) << text;  // no empty table
  EXPECT_EQ(text.find("expected"), std::string::npos) << text;
}

}  // namespace
}  // namespace kv
