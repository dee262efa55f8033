// Tests of the checker: outputs equal to the reference pass; a drifted, NaN or wrong-token output
// fails with the right attribution; padded rows are never checked.
#include <gtest/gtest.h>

#include <cmath>

#include "checker_fixture.h"

namespace kv {
namespace {

using test::Fixture;

TEST(Checker, ExactOutputsPass) {
  Fixture f;
  ASSERT_EQ(f.plan.num_rows, 15);
  EXPECT_FALSE(f.check().has_value());
  EXPECT_EQ(f.last_stats.clean_requests, 3);
  EXPECT_LT(f.last_stats.max_rel_error, 1e-6);
}

TEST(Checker, NanIsCaughtAndAttributed) {
  Fixture f;
  const int32_t row = f.plan.chunk_first_row[1] + 2;
  f.outputs.attn_out[1][row * 32 + 8 + 3] = NAN;  // layer 1, head 1
  const auto fail = f.check();
  ASSERT_TRUE(fail.has_value());
  EXPECT_EQ(fail->check, "nonfinite");
  EXPECT_EQ(fail->layer, 1);
  EXPECT_EQ(fail->head, 1);
  EXPECT_EQ(fail->request, f.plan.chunks[1].request_id);
  EXPECT_EQ(fail->position, 2);
  EXPECT_EQ(f.last_stats.nonfinite_outputs, 1);
  EXPECT_EQ(f.last_stats.clean_requests, 2);
  EXPECT_TRUE(std::isnan(f.last_stats.max_rel_error));
}

TEST(Checker, DriftAboveToleranceFailsBelowPasses) {
  Fixture f;
  f.s.checks.tolerance = 0.01;  // every site: the row's site does not matter here
  const double tol = Checker(f.s, f.w).tolerance(CheckSite::decode);
  float* row = f.outputs.attn_out[0].data() + 4 * 32;  // head 0 of row 4
  double norm = 0.0;
  for (int32_t k = 0; k < 8; ++k) norm += double(row[k]) * row[k];
  row[5] += static_cast<float>(0.5 * tol * std::sqrt(norm));
  EXPECT_FALSE(f.check().has_value());
  row[5] += static_cast<float>(1.0 * tol * std::sqrt(norm));
  const auto fail = f.check();
  ASSERT_TRUE(fail.has_value());
  EXPECT_EQ(fail->check, "drift");
  EXPECT_GT(fail->value, tol);
}

TEST(Checker, NanInTheFp8OutputIsAttributedToTheBatchWideOp) {
  Fixture f;
  f.outputs.quant_out[0][7 * 32 + 1] = INFINITY;
  const auto fail = f.check();
  ASSERT_TRUE(fail.has_value());
  EXPECT_EQ(fail->site, CheckSite::fp8_output);
  EXPECT_EQ(site_info(fail->site).ops, std::vector<DeviceOp>{DeviceOp::quant_fp8});
}

TEST(Checker, TokenFarFromTheReferenceBestFailsNaNLogitsFail) {
  Fixture f;
  const int32_t last = f.plan.chunk_first_row[0] + f.plan.chunks[0].num_tokens - 1;
  RefSequence ref(f.w, f.s.cache);
  ref.extend(f.reqs[f.plan.chunks[0].request_id].prompt, 5);
  const std::vector<double> logits = ref.logits(4);
  f.outputs.sampled[last] =
      static_cast<int32_t>(std::min_element(logits.begin(), logits.end()) - logits.begin());
  auto fail = f.check();
  ASSERT_TRUE(fail.has_value());
  EXPECT_EQ(fail->check, "token");
  f.outputs.sampled[last] = -1;  // argmax of NaN logits
  fail = f.check();
  ASSERT_TRUE(fail.has_value());
  EXPECT_EQ(fail->check, "nonfinite");
  EXPECT_EQ(fail->site, CheckSite::sampled_token);
}

}  // namespace
}  // namespace kv
