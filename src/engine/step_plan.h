// step_plan.h — everything one forward step needs, built on the host from the scheduler's output:
// the row order, per-row tokens/positions/slots, decode block tables and split-KV plan, prefill
// sequence layout and context lengths, and (with CUDA graphs) the padding to a capture size.
//
// Row order: decode rows first, then the prefill tokens of sequences that have cached context,
// then those of sequences without. `prefill_tokens_with_context` counts the middle group; the
// context kernel writes only those rows, and merge_attn_states merges only those (seed 002).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/scheduler.h"

namespace kv {

struct StepPlan {
  int32_t num_rows = 0;         // real token rows
  int32_t padded_rows = 0;      // rows the forward runs over (= num_rows unless graph-padded)
  bool use_graph = false;       // replay the graph captured for padded_rows
  int32_t num_decode = 0;       // real decode rows [0, num_decode)
  int32_t prefill_tokens_with_context = 0;

  // Per padded row. Padded rows: token 0, position 0, slot -1; so are the rows a hybrid request
  // recomputes in its prefix-hit blocks (Request::shared_prefix_blocks): not written.
  std::vector<int32_t> tokens, positions;
  std::vector<int64_t> slot_mapping;

  // Decode, per padded decode row. Padded rows: seq_len 0, block table of null blocks, 0 splits.
  int32_t block_table_stride = 0;          // max blocks per sequence
  std::vector<int32_t> decode_block_table;  // [padded decode rows][block_table_stride]
  std::vector<int32_t> decode_seq_lens;

  // Prefill sequences, context ones first. Rows of sequence i: [q_starts[i], q_starts[i+1])
  // relative to the first prefill row.
  int32_t num_prefill_seqs = 0;
  int32_t num_context_seqs = 0;
  std::vector<int32_t> prefill_q_starts;       // [num_prefill_seqs + 1]
  // Every prefill sequence's cached tokens (0 without context) and block table, new tokens'
  // blocks included: what a fused paged prefill reads. Their first num_context_seqs rows are the
  // context sequences', what the gather reads.
  std::vector<int32_t> prefill_ctx_lens;       // [num_prefill_seqs]
  std::vector<int32_t> prefill_block_table;    // [num_prefill_seqs][block_table_stride]
  std::vector<int32_t> context_starts;         // [num_context_seqs + 1]

  // Linear-attention sequences over all padded rows: each decode row (padded ones too) is a
  // one-row sequence, then each prefill chunk. Padded rows: state block -1 (read and write
  // nothing). has_state: the chunk continues a state (start > 0); else it starts from zero.
  std::vector<int32_t> linear_seq_starts;      // [linear seqs + 1]
  std::vector<int32_t> linear_state_blocks;    // [linear seqs]
  std::vector<int32_t> linear_has_state;       // [linear seqs]

  // What each row is, for the checks: the chunk it belongs to (index into `chunks`).
  std::vector<ScheduledChunk> chunks;          // in row order
  std::vector<int32_t> chunk_first_row;        // [chunks]
  std::vector<int32_t> chunk_source;           // [chunks] index in SchedulerOutput::chunks

  int32_t chunk_last_row(size_t j) const { return chunk_first_row[j] + chunks[j].num_tokens - 1; }
  // The block table row of chunk j: decode chunks come first, one row each, then the prefill
  // sequences in row order.
  const int32_t* chunk_block_table(size_t j) const {
    const size_t decode = static_cast<size_t>(num_decode), stride = static_cast<size_t>(block_table_stride);
    return j < decode ? &decode_block_table[j * stride] : &prefill_block_table[(j - decode) * stride];
  }

  // Rows the decode op runs over: a graph replay runs all padded rows.
  int32_t decode_rows() const { return use_graph ? padded_rows : num_decode; }
  int32_t prefill_rows() const { return num_rows - num_decode; }
  int32_t total_context_tokens() const { return context_starts.empty() ? 0 : context_starts.back(); }
  // The most new tokens of one prefill sequence (the first `seqs` of them), and the longest
  // cached context.
  int32_t max_prefill_len(int32_t seqs) const {
    int32_t m = 0;
    for (int32_t s = 0; s < seqs && s + 1 < static_cast<int32_t>(prefill_q_starts.size()); ++s)
      m = std::max(m, prefill_q_starts[s + 1] - prefill_q_starts[s]);
    return m;
  }
  int32_t max_context_len() const {
    int32_t m = 0;
    for (int32_t l : prefill_ctx_lens) m = std::max(m, l);
    return m;
  }
  int32_t linear_seqs() const { return static_cast<int32_t>(linear_state_blocks.size()); }
};

struct PlanLimits {
  int32_t block_size = 16;
  int32_t block_table_stride = 1;             // max blocks per sequence
  int32_t max_decode_splits = 1;
  std::vector<int32_t> capture_sizes;         // empty: no graphs
  bool fp8_decode = false;                    // the fp8 path builds its decode metadata itself
  // What graph-padded decode rows hold (the device's padding contract): their seq_len, and the
  // block-table entry of padded rows and of every row's unused entries.
  int32_t pad_seq_len = 0;
  int32_t pad_block_id = 0;
};

StepPlan build_step_plan(const SchedulerOutput& out, const Scheduler& sched,
                         const PlanLimits& limits);

// The plan of a graph-capture batch: `rows` padded decode rows (dummy inputs).
StepPlan build_capture_plan(int32_t rows, const PlanLimits& limits);

}  // namespace kv
