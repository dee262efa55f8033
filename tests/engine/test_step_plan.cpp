// Tests of StepPlan: row order (decodes, prefills with context, prefills without), context
// bookkeeping, slot mapping, split-KV plan and CUDA-graph padding.
#include <gtest/gtest.h>

#include "engine/step_plan.h"

#include "kernels/decode_splits.h"

namespace kv {
namespace {

struct PlanFixture {
  EngineSpec spec;
  BlockPool pool{64, false};
  Scheduler sched{spec, 3, pool};
  std::vector<Request> reqs = std::vector<Request>(4);
  PlanFixture() {
    for (int32_t i = 0; i < 4; ++i) {
      reqs[i].id = i;
      reqs[i].prompt.assign(10, i + 1);
      reqs[i].block_ids = {10 * i + 1, 10 * i + 2, 10 * i + 3, 10 * i + 4};
      sched.add(&reqs[i]);
    }
  }
  PlanLimits limits(std::vector<int32_t> capture = {}) const {
    PlanLimits l;
    l.block_size = 3;
    l.block_table_stride = 5;
    l.max_decode_splits = 2;
    l.capture_sizes = std::move(capture);
    return l;
  }
};

TEST(StepPlan, OrdersDecodesThenContextPrefillsThenFreshPrefills) {
  PlanFixture f;
  SchedulerOutput out;
  out.chunks = {{0, 0, 4, false, false},   // prefill without context
                {1, 9, 1, true, true},     // decode at position 9
                {2, 6, 3, false, false},   // prefill with 6 tokens of context
                {3, 7, 1, true, true}};    // decode
  const StepPlan p = build_step_plan(out, f.sched, f.limits());
  ASSERT_EQ(p.num_rows, 9);
  EXPECT_EQ(p.num_decode, 2);
  EXPECT_FALSE(p.use_graph);
  EXPECT_EQ(p.chunks[0].request_id, 1);
  EXPECT_EQ(p.chunks[1].request_id, 3);
  EXPECT_EQ(p.chunks[2].request_id, 2);
  EXPECT_EQ(p.chunks[3].request_id, 0);
  EXPECT_EQ(p.chunk_source, std::vector<int32_t>({1, 3, 2, 0}));
  EXPECT_EQ(p.prefill_tokens_with_context, 3);
  EXPECT_EQ(p.num_prefill_seqs, 2);
  EXPECT_EQ(p.num_context_seqs, 1);
  EXPECT_EQ(p.prefill_ctx_lens, std::vector<int32_t>({6, 0}));  // context sequences first
  EXPECT_EQ(p.prefill_q_starts, std::vector<int32_t>({0, 3, 7}));
  // The longest query runs a host-sized kernel grid needs (varlen's max_q_len / max_k_len).
  EXPECT_EQ(p.max_prefill_len(p.num_context_seqs), 3);
  EXPECT_EQ(p.max_prefill_len(p.num_prefill_seqs), 4);
  EXPECT_EQ(p.max_context_len(), 6);
  EXPECT_EQ(p.decode_seq_lens, std::vector<int32_t>({10, 8}));
  // Position 9 of request 1 lives in its 4th block (9 / 3 = 3), entry 0.
  EXPECT_EQ(p.slot_mapping[0], static_cast<int64_t>(f.reqs[1].block_ids[3]) * 3 + 0);
  EXPECT_EQ(p.positions[2], 6);
  EXPECT_EQ(p.tokens[2], 3);
}

// A hybrid request recomputing a prefix hit (scheduler.h) writes none of the hit's blocks: its
// rows there have slot -1, like padded rows; the rows past the hit are written as usual.
TEST(StepPlan, RowsInSharedPrefixBlocksAreNotWritten) {
  PlanFixture f;
  f.reqs[0].shared_prefix_blocks = 2;  // positions 0-5
  SchedulerOutput out;
  out.chunks = {{0, 0, 8, false, false}, {1, 4, 3, false, false}};
  const StepPlan p = build_step_plan(out, f.sched, f.limits());
  ASSERT_EQ(p.num_rows, 11);
  for (int32_t row = 0; row < 3; ++row)  // request 1 (with context) has none: written
    EXPECT_EQ(p.slot_mapping[row], f.reqs[1].block_ids[(4 + row) / 3] * 3 + (4 + row) % 3);
  for (int32_t pos = 0; pos < 8; ++pos)
    EXPECT_EQ(p.slot_mapping[3 + pos], pos < 6 ? -1 : f.reqs[0].block_ids[2] * 3 + pos % 3)
        << "position " << pos;
  EXPECT_EQ(p.prefill_ctx_lens, std::vector<int32_t>({4, 0}));  // recomputed: no context
}

TEST(StepPlan, DecodeOnlyStepIsPaddedToTheSmallestCaptureSize) {
  PlanFixture f;
  SchedulerOutput out;
  out.chunks = {{0, 9, 1, true, true}, {1, 4, 1, true, true}, {2, 2, 1, true, true}};
  const StepPlan p = build_step_plan(out, f.sched, f.limits({2, 4, 8}));
  ASSERT_TRUE(p.use_graph);
  EXPECT_EQ(p.num_rows, 3);
  EXPECT_EQ(p.padded_rows, 4);
  EXPECT_EQ(p.decode_rows(), 4);
  EXPECT_EQ(p.slot_mapping[3], -1);
  EXPECT_EQ(p.decode_seq_lens[3], 0);
  for (int32_t k = 0; k < 5; ++k) EXPECT_EQ(p.decode_block_table[3 * 5 + k], 0);  // null block
  // No splits for a padded row, whichever built-in planner runs.
  for (DType dt : {DType::bf16, DType::fp8_e4m3})
    EXPECT_EQ(plan_decode_splits_for(dt, p.decode_seq_lens, 3, 4)[kDecodeMetaHeader + 3], 0);
}

// A backend's padding contract (seq_len 1, block -1): padded rows and every row's unused
// block-table entries say so; the capture batch stays real one-token sequences on the null block.
TEST(StepPlan, PaddedRowsFollowTheDevicesPaddingContract) {
  PlanFixture f;
  SchedulerOutput out;
  out.chunks = {{0, 9, 1, true, true}, {1, 4, 1, true, true}, {2, 2, 1, true, true}};
  PlanLimits limits = f.limits({2, 4, 8});
  limits.pad_seq_len = 1;
  limits.pad_block_id = -1;
  const StepPlan p = build_step_plan(out, f.sched, limits);
  ASSERT_EQ(p.padded_rows, 4);
  EXPECT_EQ(p.decode_seq_lens, std::vector<int32_t>({10, 5, 3, 1}));
  for (int32_t k = 0; k < 5; ++k) EXPECT_EQ(p.decode_block_table[3 * 5 + k], -1);
  EXPECT_EQ(p.decode_block_table[0 * 5 + 4], -1);  // request 0 has 4 blocks: entry 4 is unused
  EXPECT_EQ(p.decode_block_table[0 * 5 + 3], f.reqs[0].block_ids[3]);
  EXPECT_EQ(p.slot_mapping[3], -1);
  const StepPlan cap = build_capture_plan(2, limits);
  EXPECT_EQ(cap.decode_seq_lens, std::vector<int32_t>({1, 1}));
  for (int32_t e : cap.decode_block_table) EXPECT_EQ(e, 0);
}

TEST(StepPlan, MixedOrOversizedStepsRunEagerly) {
  PlanFixture f;
  SchedulerOutput mixed;
  mixed.chunks = {{0, 9, 1, true, true}, {1, 0, 2, false, false}};
  EXPECT_FALSE(build_step_plan(mixed, f.sched, f.limits({2, 4})).use_graph);
  SchedulerOutput big;
  for (int32_t i = 0; i < 4; ++i) big.chunks.push_back({i, 5, 1, true, true});
  EXPECT_FALSE(build_step_plan(big, f.sched, f.limits({2})).use_graph);
}

TEST(StepPlan, SplitPlanCoversEverySequenceWithinMaxSplits) {
  for (int32_t bs : {1, 3, 7, 16}) {
    const std::vector<int32_t> lens = {1, 0, 5, 33, 100, 7};
    const std::vector<int32_t> meta = plan_decode_splits(lens, bs, 4);
    const int32_t chunk = meta[0];
    EXPECT_EQ(chunk % bs, 0) << bs;
    for (size_t r = 0; r < lens.size(); ++r) {
      const int32_t splits = meta[kDecodeMetaHeader + r];
      EXPECT_LE(splits, 4);
      EXPECT_GE(splits * chunk, lens[r]);
      EXPECT_EQ(splits == 0, lens[r] == 0);
    }
  }
}

// engine.decode_splits "uniform": every real row gets the batch's largest split count, so the
// shorter rows' last splits start past their end (empty); padded rows still get none.
TEST(StepPlan, UniformSplitPlansGiveShorterRowsEmptySplits) {
  for (DType dt : {DType::bf16, DType::fp8_e4m3}) {
    for (int32_t bs : {1, 3, 7, 16}) {
      const std::vector<int32_t> lens = {1, 0, 5, 33, 100, 7};
      const std::vector<int32_t> per_row = plan_decode_splits_for(dt, lens, bs, 4);
      const std::vector<int32_t> uniform = plan_decode_splits_for(dt, lens, bs, 4, true);
      EXPECT_EQ(uniform[0], per_row[0]) << "the same chunk";
      const int32_t most = per_row[kDecodeMetaHeader + 4];  // the longest row's count
      int32_t empty = 0;
      for (size_t r = 0; r < lens.size(); ++r) {
        const int32_t splits = uniform[kDecodeMetaHeader + r];
        EXPECT_EQ(splits, lens[r] == 0 ? 0 : most) << bs << " row " << r;
        if (lens[r] > 0) empty += splits - per_row[kDecodeMetaHeader + r];
      }
      if (most > 1) {
        EXPECT_GT(empty, 0) << "row 0 (one token) has empty splits, " << bs;
      }
    }
  }
  EXPECT_EQ(plan_decode_splits({40, 3, 0, 17}, 4, 4, true),
            std::vector<int32_t>({12, 4, 4, 0, 4}));
}

TEST(StepPlan, LinearSequencesFollowTheRowOrderWithTheirStateBlocks) {
  PlanFixture f;
  for (int32_t i = 0; i < 4; ++i) f.reqs[i].state_block = 50 + i;
  SchedulerOutput out;
  out.chunks = {{0, 0, 4, false, false},   // fresh prefill: starts from a zero state
                {1, 9, 1, true, true},     // decode: continues its state
                {2, 6, 3, false, false}};  // prefill with context: continues its state
  const StepPlan p = build_step_plan(out, f.sched, f.limits());
  EXPECT_EQ(p.linear_seq_starts, std::vector<int32_t>({0, 1, 4, 8}));
  EXPECT_EQ(p.linear_state_blocks, std::vector<int32_t>({51, 52, 50}));
  EXPECT_EQ(p.linear_has_state, std::vector<int32_t>({1, 1, 0}));
  EXPECT_EQ(p.linear_seqs(), 3);
}

TEST(StepPlan, PaddedGraphRowsAreLinearSequencesThatTouchNoState) {
  PlanFixture f;
  f.reqs[1].state_block = 7;
  SchedulerOutput out;
  out.chunks = {{1, 9, 1, true, true}};
  const StepPlan p = build_step_plan(out, f.sched, f.limits({4, 8}));
  ASSERT_TRUE(p.use_graph);
  ASSERT_EQ(p.padded_rows, 4);
  EXPECT_EQ(p.linear_seq_starts, std::vector<int32_t>({0, 1, 2, 3, 4}));
  EXPECT_EQ(p.linear_state_blocks, std::vector<int32_t>({7, -1, -1, -1}));
  const StepPlan cap = build_capture_plan(2, f.limits({2}));
  EXPECT_EQ(cap.linear_state_blocks, std::vector<int32_t>({-1, -1}));
  EXPECT_EQ(cap.linear_seq_starts, std::vector<int32_t>({0, 1, 2}));
}

TEST(StepPlan, Fp8MetadataBuilderBalancesBlocksOverWorkParts) {
  // 9 rows of 2 blocks and one of 16 (block size 4): 34 blocks over 8 parts -> 5-block chunks.
  std::vector<int32_t> lens(9, 8);
  lens.push_back(64);
  const auto fp8 = plan_decode_splits_fp8(lens, 4, 8);
  EXPECT_EQ(fp8[0], 20);
  EXPECT_EQ(fp8[kDecodeMetaHeader + 0], 1);
  EXPECT_EQ(fp8[kDecodeMetaHeader + 9], 4);
  const auto bf16 = plan_decode_splits(lens, 4, 8);
  EXPECT_EQ(bf16[0], 8);  // the longest row over 8 splits: a different plan
  // Never more than max_splits for the longest row, never a chunk below one block.
  const auto tight = plan_decode_splits_fp8({400, 1, 0}, 16, 2);
  EXPECT_EQ(tight[0], 208);
  EXPECT_EQ(tight[kDecodeMetaHeader + 0], 2);
  EXPECT_EQ(tight[kDecodeMetaHeader + 1], 1);
  EXPECT_EQ(tight[kDecodeMetaHeader + 2], 0);
  EXPECT_EQ(plan_decode_splits_fp8({1}, 16, 4)[0], 16);
}

TEST(StepPlan, Fp8CachesPlanWithTheirOwnBuilder) {
  const std::vector<int32_t> lens = {9, 7, 40, 0};
  EXPECT_EQ(plan_decode_splits_for(DType::bf16, lens, 3, 4), plan_decode_splits(lens, 3, 4));
  EXPECT_EQ(plan_decode_splits_for(DType::f32, lens, 3, 4), plan_decode_splits(lens, 3, 4));
  EXPECT_EQ(plan_decode_splits_for(DType::fp8_e4m3, lens, 3, 4),
            plan_decode_splits_fp8(lens, 3, 4));
}

}  // namespace
}  // namespace kv
