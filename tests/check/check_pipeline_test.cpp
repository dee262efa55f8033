// check_pipeline_test.cpp — checking one step behind the engine (CheckPipeline, overlap on) gives
// the verdict, first failure and figures of checking each step before the next; what a check
// throws reaches the caller, and no later step is checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>

#include "check/check_pipeline.h"
#include "reference/host/host_reference.h"
#include "check/tolerances.h"
#include "device/host_device.h"
#include "engine/engine.h"
#include "engine/workload.h"
#include "scenario/parse.h"
#include "support/shipped_scenario.h"

namespace kv {
namespace {

Scenario load(const std::string& name) { return test::shipped_scenario(name); }

struct PipelineRun {
  std::optional<Failure> first_failure;
  std::vector<EpochStats> epochs;
  int64_t steps = 0;
};

// Runs every epoch of `s` on the host device, its steps checked through a pipeline.
// The CPU reference, judging up to `steps` steps per run (the GPU reference's batching).
class BatchingHostReference : public HostReference {
 public:
  BatchingHostReference(const Scenario& s, const ModelWeights& w, unsigned workers, int32_t steps)
      : HostReference(w, s.cache, s.model.num_q_heads, s.model.head_dim, workers),
        steps_(steps) {}
  int32_t steps_per_run() const override { return steps_; }

 private:
  int32_t steps_;
};

// The reference runs on `workers` threads and takes `steps` steps per run. fail_fast: the engine
// stops before its next step once the pipeline has found a failure (kvcheck run --fail-fast).
PipelineRun run(const Scenario& s, bool overlap, const std::function<void()>& interrupt = {},
                unsigned workers = 2, int32_t steps = 1, bool fail_fast = false) {
  HostDevice dev;
  Engine engine(s, dev);
  Checker checker(s, engine.weights(), drift_tolerances(s, OpPrecision::host_f32),
                  std::make_unique<BatchingHostReference>(s, engine.weights(), workers, steps));
  if (interrupt) checker.set_interrupt(interrupt);
  CheckPipeline pipeline(checker, overlap);
  EXPECT_EQ(pipeline.overlap(), overlap);
  PipelineRun r;
  const auto stop = [&] { return fail_fast && pipeline.found_failure(); };
  for (int32_t epoch = 1; epoch <= s.workload.epochs && !stop(); ++epoch) {
    std::vector<Request> requests = make_workload(s.workload, s.seed, s.model.vocab_size);
    checker.begin_epoch(epoch, static_cast<int32_t>(requests.size()));
    engine.run_epoch(
        requests,
        [&](int64_t step, const StepPlan& plan, StepOutputs&& out, const Scheduler& sched) {
          pipeline.submit(snapshot_step(step, plan, std::move(out), sched));
          ++r.steps;
        },
        stop);
    pipeline.drain();
    r.epochs.push_back(checker.end_epoch(requests));
  }
  EXPECT_EQ(pipeline.found_failure(), checker.first_failure().has_value());
  r.first_failure = checker.first_failure();
  return r;
}

void expect_same(const PipelineRun& a, const PipelineRun& b) {
  ASSERT_EQ(a.first_failure.has_value(), b.first_failure.has_value());
  if (a.first_failure) {
    EXPECT_EQ(a.first_failure->epoch, b.first_failure->epoch);
    EXPECT_EQ(a.first_failure->step, b.first_failure->step);
    EXPECT_EQ(a.first_failure->request, b.first_failure->request);
    EXPECT_EQ(a.first_failure->position, b.first_failure->position);
    EXPECT_EQ(a.first_failure->layer, b.first_failure->layer);
    EXPECT_EQ(a.first_failure->head, b.first_failure->head);
    EXPECT_EQ(a.first_failure->check, b.first_failure->check);
    EXPECT_EQ(a.first_failure->detail, b.first_failure->detail);
  }
  ASSERT_EQ(a.epochs.size(), b.epochs.size());
  for (size_t e = 0; e < a.epochs.size(); ++e) {
    EXPECT_EQ(a.epochs[e].clean_requests, b.epochs[e].clean_requests);
    EXPECT_EQ(a.epochs[e].nonfinite_outputs, b.epochs[e].nonfinite_outputs);
    EXPECT_EQ(a.epochs[e].first_bad_step, b.epochs[e].first_bad_step);
    // Bit-identical: the same arithmetic on the same data (NaN compares by its string).
    EXPECT_EQ(std::to_string(a.epochs[e].max_rel_error), std::to_string(b.epochs[e].max_rel_error));
    for (size_t k = 0; k < a.epochs[e].site_max_rel_error.size(); ++k)
      EXPECT_EQ(std::to_string(a.epochs[e].site_max_rel_error[k]),
                std::to_string(b.epochs[e].site_max_rel_error[k]));
  }
}

TEST(CheckPipeline, OverlappedChecksGiveTheSerialVerdictOnACorruptRun) {
  const Scenario s = load("regressions/merge-ignores-context-count.json");
  const PipelineRun serial = run(s, false), overlapped = run(s, true);
  ASSERT_TRUE(serial.first_failure) << "the regression is caught";
  EXPECT_GT(serial.steps, 10);
  expect_same(serial, overlapped);
}

TEST(CheckPipeline, OverlappedChecksGiveTheSerialVerdictOnACleanRun) {
  Scenario s = load("regressions/merge-ignores-context-count.json");
  s.regressions = {};
  const PipelineRun serial = run(s, false), overlapped = run(s, true);
  EXPECT_FALSE(serial.first_failure);
  EXPECT_GT(serial.epochs.at(0).max_rel_error, 0.0) << "rows were compared";
  expect_same(serial, overlapped);
}

// Steps judged several at a time (a reference with steps_per_run > 1: the held steps' jobs go to
// one run, several jobs of a request among them) give every figure of judging them one by one.
TEST(CheckPipeline, StepsJudgedTogetherGiveTheVerdictOfStepsJudgedOneByOne) {
  for (const char* name : {"regressions/merge-ignores-context-count.json",
                            "regressions/new-blocks-not-zeroed.json"}) {
    SCOPED_TRACE(name);
    Scenario s = load(name);
    s.workload.epochs = std::min(s.workload.epochs, 2);
    const PipelineRun one = run(s, false);
    ASSERT_TRUE(one.first_failure) << "the regression is caught";
    expect_same(one, run(s, false, {}, 2, 5));
    expect_same(one, run(s, true, {}, 2, 16));
    s.regressions = {};
    const PipelineRun clean = run(s, false);
    EXPECT_FALSE(clean.first_failure);
    expect_same(clean, run(s, true, {}, 2, 7));
  }
}

// --fail-fast: the engine stops soon after the failing step, serial or overlapped, steps judged
// one by one or 16 at a time, with the first failure of the whole run; a clean run runs whole.
TEST(CheckPipeline, AFoundFailureStopsTheEngineWithTheWholeRunsFirstFailure) {
  Scenario s = load("regressions/new-blocks-not-zeroed.json");  // fails in epoch 2 of 6
  const PipelineRun whole = run(s, false);
  ASSERT_TRUE(whole.first_failure) << "the regression is caught";
  for (bool overlap : {false, true})
    for (int32_t steps : {1, 16}) {
      SCOPED_TRACE(std::string(overlap ? "overlapped" : "serial") + ", steps per run " +
                   std::to_string(steps));
      const PipelineRun fast = run(s, overlap, {}, 2, steps, true);
      ASSERT_TRUE(fast.first_failure);
      EXPECT_EQ(fast.first_failure->epoch, whole.first_failure->epoch);
      EXPECT_EQ(fast.first_failure->step, whole.first_failure->step);
      EXPECT_EQ(fast.first_failure->detail, whole.first_failure->detail);
      EXPECT_LT(fast.steps, whole.steps);
      EXPECT_EQ(fast.epochs.size(), static_cast<size_t>(whole.first_failure->epoch));
    }
  s.regressions = {};
  const PipelineRun clean = run(s, true, {}, 2, 16, true);
  EXPECT_FALSE(clean.first_failure);
  EXPECT_EQ(clean.epochs.size(), static_cast<size_t>(s.workload.epochs));
  EXPECT_EQ(clean.steps, run(s, false).steps);
}

TEST(CheckPipeline, WhatACheckThrowsReachesTheEngineAndEndsTheChecks) {
  const Scenario s = load("regressions/merge-ignores-context-count.json");
  for (bool overlap : {false, true}) {
    std::atomic<int64_t> calls{0};
    EXPECT_THROW(run(s, overlap,
                     [&] {
                       if (++calls == 50) throw std::runtime_error("time is up");
                     },
                     1),
                 std::runtime_error)
        << (overlap ? "overlapped" : "serial");
    EXPECT_EQ(calls.load(), 50) << "nothing is checked after the throw";
  }
}

TEST(CheckPipeline, AStepLeftWaitingWhenTheRunEndsIsDropped) {
  const Scenario s = load("regressions/merge-ignores-context-count.json");
  HostDevice dev;
  Engine engine(s, dev);
  Checker checker(s, engine.weights(), 1);
  std::vector<Request> requests = make_workload(s.workload, s.seed, s.model.vocab_size);
  checker.begin_epoch(1, static_cast<int32_t>(requests.size()));
  int64_t submitted = 0;
  try {
    CheckPipeline pipeline(checker, true);
    engine.run_epoch(requests, [&](int64_t step, const StepPlan& plan, StepOutputs&& out,
                                   const Scheduler& sched) {
      pipeline.submit(snapshot_step(step, plan, std::move(out), sched));
      if (++submitted == 3) throw std::runtime_error("the engine failed");
    });
    FAIL() << "the engine's exception ends the run";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the engine failed");  // and the pipeline's thread was joined
  }
  EXPECT_EQ(submitted, 3);
}

}  // namespace
}  // namespace kv
