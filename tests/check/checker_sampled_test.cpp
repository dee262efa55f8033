// checker_sampled_test.cpp — the sampled reference mode and the parallel reference extension:
// requests outside the sample get no reference but are still scanned for NaN/Inf in every output
// and logit; requests inside it are checked exactly as in full mode; the thread count never
// changes a result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "reference/reference_sample.h"
#include "checker_fixture.h"

namespace kv {
namespace {

using test::Fixture;

constexpr int32_t kQDim = 32;  // the fixture's num_q_heads * head_dim

// Switches the fixture to checks.reference "sampled" with a sample of `n` of its 3 requests.
// (A Fixture is not copied: its scheduler points into it.)
void make_sampled(Fixture& f, int32_t n) {
  f.s.seed = 7;
  f.s.checks.reference = ReferenceMode::sampled;
  f.s.checks.sampled_requests = n;
}

// The chunk index of the first request that is (or is not) in epoch 1's sample.
size_t chunk_of(const Fixture& f, bool in_sample) {
  const auto sample = sample_requests(f.s.seed, 1, 3, f.s.checks.sampled_requests);
  for (size_t j = 0; j < f.plan.chunks.size(); ++j) {
    const bool in = std::find(sample.begin(), sample.end(), f.plan.chunks[j].request_id) !=
                    sample.end();
    if (in == in_sample) return j;
  }
  ADD_FAILURE() << "no such chunk";
  return 0;
}

// Row i of chunk j, layer l, head h: the first element of that head.
float* head_of(Fixture& f, std::vector<std::vector<float>>& out, size_t j, int32_t i, size_t l,
               int32_t h) {
  return out[l].data() + (f.plan.chunk_first_row[j] + i) * kQDim + h * 8;
}

// A clean epoch whose 3 requests each got a reference and were checked, as in full mode.
void expect_every_request_checked(Fixture& f) {
  EXPECT_FALSE(f.check().has_value());
  EXPECT_EQ(f.last_stats.checked_requests, 3);
  EXPECT_EQ(f.last_references, 3u);
}

TEST(CheckerSampled, ChecksOnlyTheSampleAndBuildsNoOtherReference) {
  Fixture f;
  make_sampled(f, 1);
  EXPECT_FALSE(f.check().has_value());
  EXPECT_EQ(f.last_stats.checked_requests, 1);
  EXPECT_EQ(f.last_stats.clean_requests, 3);
  EXPECT_EQ(f.last_references, 1u) << "a reference only for the sampled request";
  EXPECT_LT(f.last_stats.max_rel_error, 1e-6);

  Fixture full;
  expect_every_request_checked(full);
}

TEST(CheckerSampled, ASampleLargerThanTheEpochChecksEveryRequest) {
  Fixture f;
  make_sampled(f, 8);
  expect_every_request_checked(f);
}

TEST(CheckerSampled, NanInAnUnsampledRequestIsCaught) {
  Fixture f;
  make_sampled(f, 1);
  const size_t j = chunk_of(f, false);
  head_of(f, f.outputs.attn_out, j, 1, 1, 2)[5] = NAN;  // layer 1, head 2, second token
  const auto fail = f.check();
  ASSERT_TRUE(fail.has_value());
  EXPECT_EQ(fail->request, f.plan.chunks[j].request_id);
  EXPECT_EQ(fail->check, "nonfinite");
  EXPECT_EQ(fail->layer, 1);
  EXPECT_EQ(fail->head, 2);
  EXPECT_EQ(fail->position, f.plan.chunks[j].start + 1);
  EXPECT_EQ(f.last_stats.nonfinite_outputs, 1);
  EXPECT_EQ(f.last_stats.clean_requests, 2);
  EXPECT_TRUE(std::isnan(f.last_stats.max_rel_error));
}

TEST(CheckerSampled, InfInAnUnsampledFp8RowAndNanLogitsAreCaught) {
  Fixture f;
  make_sampled(f, 1);
  const size_t j = chunk_of(f, false);
  head_of(f, f.outputs.quant_out, j, 0, 0, 0)[0] = INFINITY;
  auto fail = f.check();
  ASSERT_TRUE(fail.has_value());
  EXPECT_EQ(fail->request, f.plan.chunks[j].request_id);
  EXPECT_EQ(fail->site, CheckSite::fp8_output);

  Fixture g;
  make_sampled(g, 1);
  g.outputs.sampled[g.plan.chunk_last_row(j)] = -1;  // argmax of NaN logits
  fail = g.check();
  ASSERT_TRUE(fail.has_value());
  EXPECT_EQ(fail->request, g.plan.chunks[j].request_id);
  EXPECT_EQ(fail->site, CheckSite::sampled_token);
  EXPECT_EQ(fail->check, "nonfinite");
}

// The trade-off, stated as a test: drift needs the reference, so only the sample is checked for
// it; the sampled requests are checked exactly as in full mode.
TEST(CheckerSampled, DriftIsCheckedInTheSampleOnly) {
  Fixture plain;
  plain.s.checks.tolerance = 0.01;  // every site: the row's site does not matter here
  const double tol = Checker(plain.s, plain.w).tolerance(CheckSite::decode);
  for (bool in_sample : {false, true}) {
    Fixture f;
    f.s.checks.tolerance = 0.01;
    make_sampled(f, 1);
    const size_t j = chunk_of(f, in_sample);
    float* head = head_of(f, f.outputs.attn_out, j, 0, 0, 1);
    double norm = 0.0;
    for (int32_t k = 0; k < 8; ++k) norm += double(head[k]) * head[k];
    head[3] += static_cast<float>(3.0 * tol * std::sqrt(norm));
    const auto fail = f.check();
    EXPECT_EQ(fail.has_value(), in_sample) << (in_sample ? "sampled" : "unsampled");
    if (fail) {
      EXPECT_EQ(fail->check, "drift");
      EXPECT_EQ(fail->request, f.plan.chunks[j].request_id);
    }
  }
}

// The same step judged with 1, 2 and 5 reference threads: the same first failure and the same
// figures to the last bit (the per-request work is unchanged; only its thread differs).
TEST(CheckerParallel, ThreadCountNeverChangesAResult) {
  auto judge = [](unsigned workers) {
    Fixture f;
    f.outputs.attn_out[0][4 * kQDim + 3] *= 1.01f;  // a little drift: a non-zero max error
    f.outputs.attn_out[1][11 * kQDim + 17] = NAN;
    const auto fail = f.check(workers);
    return std::pair{fail, f.last_stats};
  };
  const auto [fail1, st1] = judge(1);
  ASSERT_TRUE(fail1.has_value());
  for (unsigned workers : {2u, 5u}) {
    const auto [fail, st] = judge(workers);
    ASSERT_TRUE(fail.has_value());
    EXPECT_EQ(fail->request, fail1->request);
    EXPECT_EQ(fail->position, fail1->position);
    EXPECT_EQ(fail->layer, fail1->layer);
    EXPECT_EQ(fail->head, fail1->head);
    EXPECT_EQ(fail->check, fail1->check);
    EXPECT_EQ(st.nonfinite_outputs, st1.nonfinite_outputs);
    EXPECT_EQ(st.clean_requests, st1.clean_requests);
  }
  // Without the NaN the maximum error is a number: compare it bit for bit.
  auto max_error = [](unsigned workers) {
    Fixture f;
    f.outputs.attn_out[0][4 * kQDim + 3] *= 1.01f;
    f.check(workers);
    return f.last_stats.max_rel_error;
  };
  const double e1 = max_error(1);
  EXPECT_GT(e1, 0.0);
  for (unsigned workers : {2u, 5u}) {
    const double e = max_error(workers);
    EXPECT_EQ(std::memcmp(&e, &e1, sizeof e), 0) << e << " vs " << e1;
  }
}

}  // namespace
}  // namespace kv
