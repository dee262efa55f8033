// test_engine_idle.cpp — steps with nothing to run are skipped, not run one by one: a first
// arrival at step 2^31 - 1 costs what one at step 0 does (and its 64-bit clock cannot overflow),
// and the run is the same as one with every request there at once.
#include <gtest/gtest.h>

#include <chrono>
#include <limits>

#include "device/host_device.h"
#include "engine/engine.h"
#include "engine/workload.h"

namespace kv {
namespace {

struct EpochRun {
  EpochCounters counters;
  std::vector<std::vector<int32_t>> outputs;
  std::vector<int64_t> steps_seen;
};

EpochRun run_with(Range arrival) {
  Scenario s;
  s.model.layers = {LayerKind::attention};
  s.workload.num_requests = 3;
  s.workload.prompt_len = {4, 8};
  s.workload.new_tokens = {2, 4};
  s.workload.arrival_step = arrival;
  HostDevice dev;
  Engine engine(s, dev);
  std::vector<Request> requests = make_workload(s.workload, s.seed, s.model.vocab_size);
  EpochRun r;
  r.counters = engine.run_epoch(requests, [&](int64_t step, const StepPlan&, const StepOutputs&,
                                              const Scheduler&) { r.steps_seen.push_back(step); });
  for (const Request& q : requests) r.outputs.push_back(q.output);
  return r;
}

TEST(EngineIdle, ALateFirstArrivalIsReachedAtOnce) {
  constexpr int32_t last = std::numeric_limits<int32_t>::max();
  const auto t0 = std::chrono::steady_clock::now();
  const EpochRun late = run_with({last, last});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  const EpochRun now = run_with({0, 0});
  EXPECT_EQ(late.outputs, now.outputs);
  EXPECT_EQ(late.counters.steps, now.counters.steps);
  EXPECT_EQ(late.counters.tokens, now.counters.tokens);
  EXPECT_EQ(late.steps_seen, now.steps_seen) << "step numbers count the steps that ran";
}

TEST(EngineIdle, GapsBetweenArrivalsAreSkippedToo) {
  const auto t0 = std::chrono::steady_clock::now();
  const EpochRun spread = run_with({0, 2'000'000'000});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_GT(spread.counters.tokens, 0);
}

TEST(EngineIdle, TheSchedulerSaysWhenTheNextRequestArrives) {
  BlockPool pool(16, false);
  EngineSpec spec;
  Scheduler sched(spec, 4, pool);
  EXPECT_EQ(sched.next_arrival(), std::numeric_limits<int64_t>::max());
  Request a, b;
  a.id = 0, b.id = 1;
  a.prompt = b.prompt = {1, 2, 3};
  a.arrival_step = 70;
  b.arrival_step = 9;
  sched.add(&a);
  sched.add(&b);
  EXPECT_EQ(sched.next_arrival(), 9);
}

}  // namespace
}  // namespace kv
