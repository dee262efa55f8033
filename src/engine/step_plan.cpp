#include "engine/step_plan.h"

#include <algorithm>

namespace kv {
namespace {

int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

void append_block_row(std::vector<int32_t>& table, const std::vector<int32_t>& blocks,
                      int32_t stride) {
  const size_t at = table.size();
  table.resize(at + stride, 0);  // unused entries point at the null block
  std::copy_n(blocks.begin(), std::min<size_t>(blocks.size(), stride), table.begin() + at);
}

// The metadata buffer's contents (kDecodeMetaHeader) for one chunk size: padded rows get 0 splits.
std::vector<int32_t> split_meta(const std::vector<int32_t>& seq_lens, int32_t chunk) {
  std::vector<int32_t> meta(kDecodeMetaHeader + seq_lens.size());
  meta[0] = chunk;
  for (size_t r = 0; r < seq_lens.size(); ++r)
    meta[kDecodeMetaHeader + r] = seq_lens[r] > 0 ? ceil_div(seq_lens[r], chunk) : 0;
  return meta;
}

void pad_decode_rows(StepPlan& p, const PlanLimits& limits) {
  for (int32_t r = p.num_rows; r < p.padded_rows; ++r) {
    p.tokens.push_back(0);
    p.positions.push_back(0);
    p.slot_mapping.push_back(-1);
    p.decode_block_table.resize(p.decode_block_table.size() + limits.block_table_stride, 0);
    p.decode_seq_lens.push_back(0);
    p.linear_seq_starts.push_back(p.linear_seq_starts.back() + 1);
    p.linear_state_blocks.push_back(-1);
    p.linear_has_state.push_back(0);
  }
}

std::vector<int32_t> decode_meta_for(const StepPlan& p, const PlanLimits& limits) {
  return limits.fp8_decode
             ? plan_decode_splits_fp8(p.decode_seq_lens, limits.block_size, limits.max_decode_splits)
             : plan_decode_splits(p.decode_seq_lens, limits.block_size, limits.max_decode_splits);
}

// Linear-attention sequences are listed decode rows first, so padded decode rows (appended after
// the real ones) must come before any prefill sequence: graphs only pad decode-only steps.
void add_linear_seq(StepPlan& p, int32_t rows, int32_t state_block, bool has_state) {
  p.linear_seq_starts.push_back(p.linear_seq_starts.back() + rows);
  p.linear_state_blocks.push_back(state_block);
  p.linear_has_state.push_back(has_state ? 1 : 0);
}

}  // namespace

std::vector<int32_t> plan_decode_splits(const std::vector<int32_t>& seq_lens, int32_t block_size,
                                        int32_t max_splits) {
  // One chunk size for the whole batch, as flash-decoding schedulers pick it: enough splits for
  // the longest row to spread over max_splits, never less than one block.
  int32_t longest = 0;
  for (int32_t s : seq_lens) longest = std::max(longest, s);
  const int32_t blocks = std::max(1, ceil_div(longest, block_size));
  return split_meta(seq_lens, ceil_div(blocks, max_splits) * block_size);
}

std::vector<int32_t> plan_decode_splits_fp8(const std::vector<int32_t>& seq_lens,
                                            int32_t block_size, int32_t max_splits) {
  int32_t longest = 0;
  int64_t total_blocks = 0;
  for (int32_t s : seq_lens) {
    longest = std::max(longest, s);
    total_blocks += ceil_div(s, block_size);
  }
  const int32_t longest_blocks = std::max(1, ceil_div(longest, block_size));
  const auto balanced = static_cast<int32_t>((total_blocks + kFp8WorkParts - 1) / kFp8WorkParts);
  // At least what keeps the longest row within max_splits; otherwise an equal share of the work.
  const int32_t chunk_blocks = std::max({1, ceil_div(longest_blocks, max_splits), balanced});
  return split_meta(seq_lens, chunk_blocks * block_size);
}

StepPlan build_step_plan(const SchedulerOutput& out, const Scheduler& sched,
                         const PlanLimits& limits) {
  StepPlan p;
  p.block_table_stride = limits.block_table_stride;
  // Stable partition of the scheduler's chunks: decodes, prefills with context, prefills without.
  auto group = [](const ScheduledChunk& c) { return c.is_decode ? 0 : (c.start > 0 ? 1 : 2); };
  int32_t counts[3] = {0, 0, 0};
  for (int32_t g = 0; g < 3; ++g)
    for (size_t i = 0; i < out.chunks.size(); ++i)
      if (group(out.chunks[i]) == g) {
        p.chunks.push_back(out.chunks[i]);
        p.chunk_source.push_back(static_cast<int32_t>(i));
        ++counts[g];
      }
  p.num_decode = counts[0];
  p.num_context_seqs = counts[1];
  p.num_prefill_seqs = counts[1] + counts[2];
  p.prefill_q_starts.push_back(0);
  p.context_starts.push_back(0);
  p.linear_seq_starts.push_back(0);

  for (const auto& c : p.chunks) {
    const Request& r = *sched.find(c.request_id);
    p.chunk_first_row.push_back(static_cast<int32_t>(p.tokens.size()));
    for (int32_t i = 0; i < c.num_tokens; ++i) {
      const int32_t pos = c.start + i;
      p.tokens.push_back(r.token_at(pos));
      p.positions.push_back(pos);
      p.slot_mapping.push_back(static_cast<int64_t>(r.block_ids.at(pos / limits.block_size)) *
                                   limits.block_size + pos % limits.block_size);
    }
    add_linear_seq(p, c.num_tokens, r.state_block, c.start > 0);
    if (c.is_decode) {
      append_block_row(p.decode_block_table, r.block_ids, limits.block_table_stride);
      p.decode_seq_lens.push_back(c.start + 1);
    } else {
      p.prefill_q_starts.push_back(p.prefill_q_starts.back() + c.num_tokens);
      if (c.start > 0) {
        append_block_row(p.context_block_table, r.block_ids, limits.block_table_stride);
        p.context_lens.push_back(c.start);
        p.context_starts.push_back(p.context_starts.back() + c.start);
        p.prefill_tokens_with_context += c.num_tokens;
      }
    }
  }
  p.num_rows = static_cast<int32_t>(p.tokens.size());
  p.padded_rows = p.num_rows;

  // Decode-only steps replay the graph of the smallest capture size that holds them.
  if (p.num_decode == p.num_rows && p.num_rows > 0) {
    for (int32_t size : limits.capture_sizes) {
      if (size >= p.num_rows) {
        p.use_graph = true;
        p.padded_rows = size;
        break;
      }
    }
  }
  if (p.use_graph) pad_decode_rows(p, limits);
  p.decode_meta = decode_meta_for(p, limits);
  return p;
}

StepPlan build_capture_plan(int32_t rows, const PlanLimits& limits) {
  // Dummy decode batch of one-token sequences on the null block, as engines capture with.
  StepPlan p;
  p.block_table_stride = limits.block_table_stride;
  p.use_graph = true;
  p.num_rows = 0;
  p.padded_rows = rows;
  p.linear_seq_starts.push_back(0);
  pad_decode_rows(p, limits);
  std::fill(p.decode_seq_lens.begin(), p.decode_seq_lens.end(), 1);
  p.prefill_q_starts.push_back(0);
  p.context_starts.push_back(0);
  p.decode_meta = decode_meta_for(p, limits);
  return p;
}

}  // namespace kv
