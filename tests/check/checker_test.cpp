// Tests of the checker: outputs equal to the reference pass; a drifted, NaN or wrong-token output
// fails with the right attribution; padded rows are never checked.
#include <gtest/gtest.h>

#include <cmath>

#include "check/checker.h"
#include "engine/block_pool.h"
#include "engine/scheduler.h"
#include "engine/step_plan.h"

namespace kv {
namespace {

struct Fixture {
  Scenario s;
  ModelWeights w;
  BlockPool pool;
  Scheduler sched;
  std::vector<Request> reqs;
  SchedulerOutput out;
  StepPlan plan;
  StepOutputs outputs;

  Fixture()
      : s(make_scenario()), w(make_model_weights(s.model)), pool(32, false),
        sched(s.engine, s.cache.block_size, pool) {
    reqs.resize(3);
    for (int32_t i = 0; i < 3; ++i) {
      reqs[i].id = i;
      reqs[i].prompt = {1 + i, 5, 9, 2 * i + 3, 4};
      reqs[i].max_new_tokens = 3;
      sched.add(&reqs[i]);
    }
    out = sched.schedule(0);
    PlanLimits lim;
    lim.block_size = s.cache.block_size;
    lim.block_table_stride = 4;
    lim.max_decode_splits = 2;
    plan = build_step_plan(out, sched, lim);
    outputs = exact_outputs();
  }

  static Scenario make_scenario() {
    Scenario s;
    s.model.layers = {LayerKind::attention, LayerKind::attention};
    s.model.num_q_heads = 4;
    s.model.num_kv_heads = 2;
    s.model.head_dim = 8;
    s.model.hidden_size = 32;
    s.model.vocab_size = 40;
    s.cache.block_size = 3;
    s.cache.dtype = DType::bf16;
    s.workload.num_requests = 3;
    return s;
  }

  // What a perfect engine would output: the reference itself, rounded to float.
  StepOutputs exact_outputs() {
    StepOutputs o;
    const int32_t q_dim = 32;
    o.attn_out.assign(2, std::vector<float>(plan.num_rows * q_dim));
    o.quant_out = o.attn_out;
    o.sampled.assign(plan.num_rows, 0);
    for (size_t j = 0; j < plan.chunks.size(); ++j) {
      const ScheduledChunk& c = plan.chunks[j];
      RefSequence ref(w, s.cache);
      ref.extend(reqs[c.request_id].prompt, c.start + c.num_tokens);
      for (int32_t i = 0; i < c.num_tokens; ++i)
        for (int32_t l = 0; l < 2; ++l)
          for (int32_t k = 0; k < q_dim; ++k)
            o.attn_out[l][(plan.chunk_first_row[j] + i) * q_dim + k] =
                static_cast<float>(ref.attn_out(c.start + i, l)[k]);
      const std::vector<double> logits = ref.logits(c.start + c.num_tokens - 1);
      o.sampled[plan.chunk_first_row[j] + c.num_tokens - 1] =
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    return o;
  }

  std::optional<Failure> check() {
    Checker chk(s, w);
    chk.begin_epoch(1, 3);
    chk.check_step(0, plan, outputs, sched);
    const EpochStats st = chk.end_epoch(reqs);
    last_stats = st;
    return chk.first_failure();
  }
  EpochStats last_stats;
};

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
  const double tol = Checker(f.s, f.w).tolerance();
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
  EXPECT_EQ(fail->op, "quant_fp8");
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
  EXPECT_EQ(fail->op, "lm_head");
}

}  // namespace
}  // namespace kv
