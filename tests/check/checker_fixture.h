// checker_fixture.h — one scheduled step of three requests and what a perfect engine would output
// for it (the reference itself, rounded to float), for the checker tests to corrupt.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "check/checker.h"
#include "engine/block_pool.h"
#include "engine/scheduler.h"
#include "engine/step_plan.h"
#include "reference/host/ref_sequence.h"

namespace kv::test {

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

  // One step with `max_workers` reference threads (0: the default); the stats land in last_stats.
  std::optional<Failure> check(unsigned max_workers = 0) {
    Checker chk(s, w, max_workers);
    chk.begin_epoch(1, 3);
    chk.check_step(0, plan, outputs, sched);
    last_references = chk.live_references();
    last_stats = chk.end_epoch(reqs);
    return chk.first_failure();
  }
  EpochStats last_stats;
  size_t last_references = 0;  // reference sequences alive after the step
};

}  // namespace kv::test
