// test_coverage_counters.cpp — the engine's mechanism counters (scenario/mechanisms.h) on small
// runs whose steps are known by hand: recycled blocks, padded and multi-block graph replays,
// prefill rows with and without cached context, mixed steps, prefix hits at a block boundary.
#include <gtest/gtest.h>

#include <vector>

#include "device/host_device.h"
#include "engine/engine.h"

namespace kv {
namespace {

Scenario small_scenario() {
  Scenario s;
  s.model.layers = {LayerKind::attention};
  s.cache.num_blocks = 32;
  s.cache.block_size = 4;
  s.engine.prefix_caching = false;
  return s;
}

Request request(int32_t id, int32_t prompt_len, int32_t max_new, int32_t arrival = 0,
                int32_t salt = 0) {
  Request r;
  r.id = id;
  for (int32_t i = 0; i < prompt_len; ++i) r.prompt.push_back((salt * 7 + i * 3 + 1) % 50);
  r.max_new_tokens = max_new;
  r.arrival_step = arrival;
  return r;
}

// Runs the epochs on one engine (its pool carries over); each epoch gets fresh copies of
// `requests`.
std::vector<EpochCounters> run(const Scenario& s, const std::vector<Request>& requests,
                               int32_t epochs = 1) {
  HostDevice dev;
  Engine engine(s, dev);
  std::vector<EpochCounters> out;
  for (int32_t e = 0; e < epochs; ++e) {
    std::vector<Request> rs = requests;
    out.push_back(engine.run_epoch(
        rs, [](int64_t, const StepPlan&, const StepOutputs&, const Scheduler&) {}));
  }
  return out;
}

TEST(CoverageCounters, BlocksAreRecycledOnlyOnceThePoolHasTurnedOver) {
  Scenario s = small_scenario();
  s.cache.num_blocks = 9;  // 8 usable
  // Two requests of 9 + 2 tokens (3 blocks each at most): 6 blocks an epoch, fresh ones first.
  const std::vector<Request> rs = {request(0, 9, 3), request(1, 9, 3, 0, 1)};
  const std::vector<EpochCounters> c = run(s, rs, 3);
  ASSERT_EQ(c.size(), 3u);
  for (const EpochCounters& e : c) {
    EXPECT_EQ(e.usable_blocks, 8);
    EXPECT_EQ(e.blocks_allocated, 6);
  }
  // The FIFO queue hands out every never-used block first: 8 fresh, then only recycled ones.
  EXPECT_EQ(c[0].blocks_recycled, 0) << "epoch 1 runs on fresh blocks";
  EXPECT_EQ(c[1].blocks_recycled, 4) << "2 fresh blocks were left, then 4 recycled";
  EXPECT_EQ(c[2].blocks_recycled, 6);
}

TEST(CoverageCounters, OnlyBlocksHandedToTheKvTablesCountAsRecycled) {
  Scenario s = small_scenario();
  s.model.layers = {LayerKind::attention, LayerKind::linear};
  s.cache.pool = PoolKind::hybrid;  // state and KV in one buffer, as seed 000 has them
  s.cache.layout = KvLayout::kv_interleaved;
  s.cache.num_blocks = 5;  // 4 usable: 2 KV blocks + 1 state block per request
  const std::vector<Request> rs = {request(0, 6, 2)};
  const std::vector<EpochCounters> c = run(s, rs, 3);
  // Epoch 1: KV 1, 2, state 3; freed tail first, state last: the queue is 4 2 1 3.
  EXPECT_EQ(c[0].blocks_allocated, 3);
  EXPECT_EQ(c[0].blocks_recycled, 0);
  // Epoch 2: KV 4 (fresh) and 2, state 1: two blocks reused, one of them by the KV tables.
  EXPECT_EQ(c[1].blocks_allocated, 3);
  EXPECT_EQ(c[1].blocks_recycled, 1) << "a state block handed out again is not counted";
  // Epoch 3 (queue 3 2 4 1): KV 3, the old state block, and 2; state 4.
  EXPECT_EQ(c[2].blocks_recycled, 2) << "a state block reused as KV is";
}

TEST(CoverageCounters, GraphReplaysCountPaddedAndMultiBlockRows) {
  Scenario s = small_scenario();
  s.engine.cuda_graphs.mode = GraphMode::decode;
  s.engine.cuda_graphs.capture_sizes = {2};
  // One request: a prefill of 6 tokens (eager), then 4 decode steps (tokens 2..5) at seq lens
  // 7..10, each replaying the size-2 graph with one padded row.
  const EpochCounters c = run(s, {request(0, 6, 5)}).front();
  EXPECT_EQ(c.steps, 5);
  EXPECT_EQ(c.graph_replays, 4);
  EXPECT_EQ(c.padded_rows_replayed, 4);
  EXPECT_EQ(c.replayed_multiblock_rows, 4) << "seq lens 7..10 span more than a 4-token block";

  s.cache.block_size = 16;  // the same sequences fit one block
  const EpochCounters one_block = run(s, {request(0, 6, 5)}).front();
  EXPECT_EQ(one_block.graph_replays, 4);
  EXPECT_EQ(one_block.replayed_multiblock_rows, 0);

  s.engine.cuda_graphs.capture_sizes = {1};  // the batch fits exactly: no padding
  const EpochCounters exact = run(s, {request(0, 6, 5)}).front();
  EXPECT_EQ(exact.graph_replays, 4);
  EXPECT_EQ(exact.padded_rows_replayed, 0);
}

TEST(CoverageCounters, UniformDecodeSplitsCountTheEmptySplits) {
  Scenario s = small_scenario();  // block size 4, max_decode_splits 4
  // A (31 + 3 tokens) and B (3 + 3) prefill together, then decode together twice: at seq lens
  // 32 and 4 the chunk is 8 tokens, A needs 4 splits and B 1 (3 empty under "uniform"); at 33
  // and 5 the chunk is 12, A needs 3 and B 1 (2 empty).
  const std::vector<Request> rs = {request(0, 31, 3), request(1, 3, 3, 0, 1)};
  EXPECT_EQ(run(s, rs).front().empty_decode_splits, 0) << "per_row: every split has tokens";
  s.engine.decode_splits = DecodeSplits::uniform;
  EXPECT_EQ(run(s, rs).front().empty_decode_splits, 5);
  EXPECT_EQ(run(s, {request(0, 31, 3)}).front().empty_decode_splits, 0) << "one row alone";
}

TEST(CoverageCounters, EagerStepsReplayNothing) {
  const EpochCounters c = run(small_scenario(), {request(0, 6, 5)}).front();
  EXPECT_EQ(c.graph_replays, 0);
  EXPECT_EQ(c.padded_rows_replayed, 0);
  EXPECT_EQ(c.replayed_multiblock_rows, 0);
}

TEST(CoverageCounters, ChunkedPrefillCountsRowsWithAndWithoutContext) {
  Scenario s = small_scenario();
  s.engine.max_tokens_per_step = 6;
  // A: 10 prompt tokens in chunks 6 (no context) and 4 (6 tokens of context). B arrives at step 1
  // and takes the 2 tokens left of that step's budget (no context): a mixed step. Then A decodes
  // (1) and B continues with 5 (2 tokens of context); then the decodes.
  const std::vector<Request> rs = {request(0, 10, 2), request(1, 7, 2, 1, 1)};
  const EpochCounters c = run(s, rs).front();
  EXPECT_EQ(c.prefill_rows_without_context, 6 + 2);
  EXPECT_EQ(c.prefill_context_tokens, 6 + 2);
  EXPECT_EQ(c.mixed_prefill_steps, 1);
  EXPECT_EQ(c.tokens, 10 + 7 + 1 + 1);

  s.engine.max_tokens_per_step = 256;  // no chunking, no prefix cache: no context at all
  const EpochCounters whole = run(s, rs).front();
  EXPECT_EQ(whole.prefill_rows_without_context, 17);
  EXPECT_EQ(whole.prefill_context_tokens, 0);
  EXPECT_EQ(whole.mixed_prefill_steps, 0);
}

TEST(CoverageCounters, APrefixHitCoveringAWholeBlockAlignedPromptIsABoundaryHit) {
  Scenario s = small_scenario();
  s.engine.prefix_caching = true;
  // The same 8-token prompt (two full blocks) again once the first request has finished: both
  // blocks are cached, but one token must be computed, so the hit stops a block short.
  const EpochCounters aligned =
      run(s, {request(0, 8, 2), request(1, 8, 2, 10)}).front();
  EXPECT_EQ(aligned.boundary_prefix_hits, 1);
  EXPECT_EQ(aligned.prefix_hit_blocks, 1);
  EXPECT_EQ(aligned.prefill_context_tokens, 4) << "the recomputed block attends to the hit";

  // 9 tokens: the partial third block is computed anyway, both full blocks hit.
  const EpochCounters unaligned =
      run(s, {request(0, 9, 2), request(1, 9, 2, 10)}).front();
  EXPECT_EQ(unaligned.boundary_prefix_hits, 0);
  EXPECT_EQ(unaligned.prefix_hit_blocks, 2);
}

}  // namespace
}  // namespace kv
