#include "engine/step_plan.h"

#include <algorithm>

namespace kv {
namespace {

void append_block_row(std::vector<int32_t>& table, const std::vector<int32_t>& blocks,
                      int32_t stride, int32_t pad_block_id) {
  const size_t at = table.size();
  table.resize(at + stride, pad_block_id);  // unused entries: the null block (0), or -1
  std::copy_n(blocks.begin(), std::min<size_t>(blocks.size(), stride), table.begin() + at);
}

void pad_decode_rows(StepPlan& p, const PlanLimits& limits) {
  for (int32_t r = p.num_rows; r < p.padded_rows; ++r) {
    p.tokens.push_back(0);
    p.positions.push_back(0);
    p.slot_mapping.push_back(-1);
    p.decode_block_table.resize(p.decode_block_table.size() + limits.block_table_stride,
                                limits.pad_block_id);
    p.decode_seq_lens.push_back(limits.pad_seq_len);
    p.linear_seq_starts.push_back(p.linear_seq_starts.back() + 1);
    p.linear_state_blocks.push_back(-1);
    p.linear_has_state.push_back(0);
  }
}

// Linear-attention sequences are listed decode rows first, so padded decode rows (appended after
// the real ones) must come before any prefill sequence: graphs only pad decode-only steps.
void add_linear_seq(StepPlan& p, int32_t rows, int32_t state_block, bool has_state) {
  p.linear_seq_starts.push_back(p.linear_seq_starts.back() + rows);
  p.linear_state_blocks.push_back(state_block);
  p.linear_has_state.push_back(has_state ? 1 : 0);
}

}  // namespace

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
      const int32_t pos = c.start + i, block = pos / limits.block_size;
      p.tokens.push_back(r.token_at(pos));
      p.positions.push_back(pos);
      // A hybrid request's prefix-hit blocks are recomputed, never rewritten (scheduler.h).
      p.slot_mapping.push_back(block < r.shared_prefix_blocks
                                   ? -1
                                   : static_cast<int64_t>(r.block_ids.at(block)) *
                                             limits.block_size + pos % limits.block_size);
    }
    add_linear_seq(p, c.num_tokens, r.state_block, c.start > 0);
    if (c.is_decode) {
      append_block_row(p.decode_block_table, r.block_ids, limits.block_table_stride,
                       limits.pad_block_id);
      p.decode_seq_lens.push_back(c.start + 1);
    } else {
      p.prefill_q_starts.push_back(p.prefill_q_starts.back() + c.num_tokens);
      p.prefill_ctx_lens.push_back(c.start);
      append_block_row(p.prefill_block_table, r.block_ids, limits.block_table_stride,
                       limits.pad_block_id);
      if (c.start > 0) {
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
  std::fill(p.decode_block_table.begin(), p.decode_block_table.end(), 0);  // real sequences
  p.prefill_q_starts.push_back(0);
  p.context_starts.push_back(0);
  return p;
}

}  // namespace kv
