// run_cost_test.cpp — estimate_run_cost: its device part is what the engine really allocates,
// and each item follows the fields it names.
#include <gtest/gtest.h>

#include <algorithm>

#include "check/run_cost.h"
#include "device/host_device.h"
#include "engine/cache_layout.h"
#include "engine/engine.h"

namespace kv {
namespace {

int64_t item(const RunCost& c, const std::string& what) {
  const auto it = std::find_if(c.memory.begin(), c.memory.end(),
                               [&](const MemoryItem& m) { return m.what == what; });
  EXPECT_NE(it, c.memory.end()) << what;
  return it == c.memory.end() ? -1 : it->bytes;
}

Scenario mla_scenario() {
  Scenario s;
  s.model.layers = {LayerKind::mla, LayerKind::attention};
  s.model.kv_lora_rank = 64;
  s.model.qk_rope_dim = 16;
  s.cache.num_blocks = 300;
  s.engine.max_tokens_per_step = 512;
  s.engine.cuda_graphs = {GraphMode::decode, {1, 2, 4, 8}};
  return s;
}

TEST(RunCost, TheCacheIsTheLayoutsBytes) {
  const Scenario s = mla_scenario();
  EXPECT_EQ(item(estimate_run_cost(s), "KV cache"),
            plan_cache_layout(s.model, s.cache).total_bytes());
}

// What the engine holds once built (weights, cache, workspaces, graph inputs): the estimate's
// device items but the context gather, which grows while the run goes, within 5%.
TEST(RunCost, TheDevicePartIsWhatTheEngineAllocates) {
  for (const Scenario& s : {Scenario{}, mla_scenario()}) {
    HostDevice dev;
    const Engine engine(s, dev);
    const RunCost c = estimate_run_cost(s);
    const double expected = static_cast<double>(c.device_bytes() - item(c, "context gather"));
    const double allocated = static_cast<double>(dev.memory_stats().reserved_bytes());
    EXPECT_NEAR(allocated / expected, 1.0, 0.05) << allocated << " allocated, " << expected
                                                 << " estimated";
  }
}

TEST(RunCost, ItemsFollowTheirFields) {
  Scenario s;
  const RunCost base = estimate_run_cost(s);
  s.workload.prefix_groups = 1000;
  s.workload.shared_prefix_len = 8;
  EXPECT_GT(item(estimate_run_cost(s), "workload"), item(base, "workload") + 1000 * 32);

  Scenario sampled;
  sampled.workload.num_requests = 100;
  sampled.engine.max_running_requests = 64;
  const int64_t full = item(estimate_run_cost(sampled), "reference");
  sampled.checks.reference = ReferenceMode::sampled;
  sampled.checks.sampled_requests = 4;
  EXPECT_EQ(item(estimate_run_cost(sampled), "reference") * 16, full);

  Scenario wide;
  wide.engine.max_tokens_per_step = 4096;
  EXPECT_GT(item(estimate_run_cost(wide), "step workspaces"), 8 * item(base, "step workspaces"));
}

// BlockPool keeps 28 bytes per block (block_pool.h's arrays) however few blocks a run touches:
// with a million blocks, 27 MiB the estimate once missed (found under `ulimit -v`).
TEST(RunCost, TheBlockPoolGrowsWithTheBlocks) {
  Scenario s;
  s.engine.prefix_caching = false;
  s.cache.num_blocks = 1000;
  const int64_t small = item(estimate_run_cost(s), "block pool");
  s.cache.num_blocks = 1001000;
  EXPECT_EQ(item(estimate_run_cost(s), "block pool") - small, int64_t{28} * 1000000);
}

TEST(RunCost, WorkCountsTokensStepsAndReferencePairs) {
  Scenario s;
  s.workload.num_requests = 10;
  s.workload.prompt_len = {20, 20};
  s.workload.new_tokens = {5, 5};
  s.workload.epochs = 3;
  const RunCost c = estimate_run_cost(s);
  EXPECT_EQ(c.epochs, 3);
  EXPECT_EQ(c.tokens_per_epoch, 10 * 24);
  EXPECT_EQ(c.checked_requests, 10);
  EXPECT_EQ(c.reference_pairs, 10 * 2 * 25 * 25 / 2);
  EXPECT_GE(c.steps_per_epoch, 10);  // 2 rounds of 8 running requests x 5 decodes
}

}  // namespace
}  // namespace kv
