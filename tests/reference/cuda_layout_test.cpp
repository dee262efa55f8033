// cuda_layout_test.cpp — the GPU reference's device layout (reference/cuda_layout.h) and its
// memory estimate: parts aligned and disjoint, sized by capacity, and the estimate the sum of
// what the reference allocates (weights, scratch, a slot per request that can be live).
#include <gtest/gtest.h>

#include <algorithm>

#include "reference/cuda_layout.h"

namespace kv {
namespace {

ModelSpec hybrid() {
  ModelSpec m;
  m.layers = {LayerKind::attention, LayerKind::mla, LayerKind::linear};
  m.num_q_heads = 6;
  m.num_kv_heads = 3;
  m.head_dim = 10;
  m.hidden_size = 40;
  m.kv_lora_rank = 20;
  m.qk_rope_dim = 6;
  return m;
}

TEST(CudaLayout, PartsAreAlignedDisjointAndSizedByCapacity) {
  const ModelSpec m = hybrid();
  const int32_t cap = 37;
  const RefSlotLayout l = ref_slot_layout(m, cap);
  // (offset, bytes) of every part, in order.
  const int64_t kv = 3 * 10 * 4, lat = 26 * 4, q = 60 * 8;
  const std::vector<std::pair<int64_t, int64_t>> parts = {
      {l.layers[0].a, cap * kv}, {l.layers[0].b, cap * kv},   {l.layers[1].a, cap * lat},
      {l.layers[1].b, cap * q},  {l.layers[1].c, cap * q},    {l.layers[2].a, 6 * 10 * 10 * 8},
      {l.out, cap * 3 * q},      {l.hidden, cap * 40 * 8},   {l.ties, cap * 3 * 8},
      {l.snapshots, kRefStateSnapshots * l.snapshot_bytes}};
  EXPECT_EQ(l.snapshot_bytes, 6 * 10 * 10 * 8);  // the one linear layer's state
  int64_t end = 0;
  for (const auto& [off, bytes] : parts) {
    EXPECT_EQ(off % 256, 0);
    EXPECT_GE(off, end);  // after the previous part: no overlap
    end = off + bytes;
  }
  EXPECT_GE(l.bytes, end);
  EXPECT_LT(l.bytes, end + 256);
  EXPECT_GT(ref_slot_layout(m, cap + 1).bytes, l.bytes);
}

TEST(CudaLayout, TheEstimateIsWhatTheReferenceAllocates) {
  Scenario s;
  s.model = hybrid();
  s.workload.num_requests = 20;
  s.workload.prompt_len = {5, 30};
  s.workload.new_tokens = {2, 9};
  s.engine.max_running_requests = 6;
  s.checks.sampled_requests = 4;
  const int64_t fixed = ref_weight_bytes(s.model) +
                        ref_scratch_bytes(s.model, ref_batch_rows(s.model)) +
                        kRefSplitScratchBytes;
  const int64_t slot = ref_slot_layout(s.model, 39).bytes;
  EXPECT_EQ(cuda_reference_bytes(s, ReferenceMode::full), fixed + 6 * slot);
  EXPECT_EQ(cuda_reference_bytes(s, ReferenceMode::sampled), fixed + 4 * slot);
  s.checks.sampled_requests = 50;  // more than the live requests: as many as can be live
  EXPECT_EQ(cuda_reference_bytes(s, ReferenceMode::sampled), fixed + 6 * slot);
  EXPECT_THROW(cuda_reference_bytes(s, ReferenceMode::automatic), std::logic_error);
}

TEST(CudaLayout, BatchRowsBoundTheScratch) {
  ModelSpec m = hybrid();
  EXPECT_GE(ref_batch_rows(m), 64);
  EXPECT_LE(ref_batch_rows(m), 16384);
  m.hidden_size = 1 << 22;  // 64 MiB rows: never fewer than 64 of them
  EXPECT_EQ(ref_batch_rows(m), 64);
}

}  // namespace
}  // namespace kv
