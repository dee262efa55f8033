// scheduler.h — continuous batching over one BlockPool, in the style of vLLM v1's scheduler.
//
// Each step has a token budget (max_tokens_per_step) and a cap on running requests. Running
// requests are served first, in admission order: a decode takes 1 token, an unfinished prefill
// continues as a chunk (chunked prefill). When a running request needs blocks the pool cannot
// give, the most recently admitted running request is preempted by recompute (it may be the
// request itself). Only in a step without preemption are waiting requests admitted, in order,
// taking the longest prefix-cache hit first.
//
// Hybrid models (linear-attention layers) also give every running request one state block from
// the same pool, taken at admission with its first KV blocks and freed with them; a request is
// admitted only when both fit.
//
// Prefix caching on a hybrid model: a prefix hit shares the cached KV blocks (the attention-like
// layers' memory), but the linear layers' recurrent state at the hit's end is not cached (no
// snapshot of state at block boundaries), and a linear layer's input at every position depends
// on the layers below it. So the request computes every position from 0 — all layers, with a
// zero state — and its first chunk's rows that fall in hit blocks are not written to the cache
// (slot -1; Request::shared_prefix_blocks): the cached KV of those positions, which other
// requests may be reading, stays as its first writer left it. The hit saves memory, not
// compute.
//
// The scheduler never computes anything: schedule() says what to compute, the engine runs the
// step, update() records what was computed and sampled.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "engine/block_pool.h"
#include "engine/request.h"
#include "scenario/scenario.h"

namespace kv {

struct ScheduledChunk {
  int32_t request_id = 0;
  int32_t start = 0;       // first token position computed this step (= tokens already cached)
  int32_t num_tokens = 0;  // tokens computed this step
  bool is_decode = false;  // a single token after the fully computed prompt
  bool samples = false;    // after this chunk all tokens are computed: sample the next one
};

struct SchedulerOutput {
  int64_t step = 0;
  std::vector<ScheduledChunk> chunks;  // running requests first, then newly admitted ones
  std::vector<int32_t> preempted;      // request ids, in preemption order
  int32_t prefix_hit_blocks = 0;       // blocks taken from the prefix cache by admissions
  // Admissions whose tokens were all cached, ending at a block boundary: the hit stops a block
  // short so that the step computes (and samples after) at least one token.
  int32_t boundary_prefix_hits = 0;
  int32_t num_tokens() const;
};

class Scheduler {
 public:
  // state_blocks: blocks of recurrent state each running request holds (0 or 1).
  Scheduler(const EngineSpec& spec, int32_t block_size, BlockPool& pool, int32_t state_blocks = 0);

  // Enters the waiting queue. The request must stay alive and in place until it finishes.
  // Throws std::invalid_argument if it could never fit in the pool on its own.
  void add(Request* r);
  SchedulerOutput schedule(int64_t step);
  // After the step ran: `sampled[i]` is the token for chunks[i] when chunks[i].samples, else
  // ignored. Appends tokens, advances num_computed_tokens, caches newly full blocks, finishes
  // requests that reached max_new_tokens and frees their blocks.
  void update(const SchedulerOutput& out, const std::vector<int32_t>& sampled);

  bool has_unfinished() const { return !waiting_.empty() || !running_.empty(); }
  // The earliest arrival_step of a waiting request (INT64_MAX when none waits): with nothing
  // running, no step before it can schedule anything.
  int64_t next_arrival() const;
  const std::vector<Request*>& running() const { return running_; }
  const std::deque<Request*>& waiting() const { return waiting_; }
  Request* find(int32_t id) const;  // any request ever added; nullptr if unknown
  int32_t block_size() const { return block_size_; }

 private:
  int32_t blocks_for(int32_t num_tokens) const;
  ScheduledChunk make_chunk(const Request& r, int32_t start, int32_t n) const;
  // Serves running requests; returns the budget left.
  int32_t schedule_running(SchedulerOutput& out, int32_t budget);
  void admit_waiting(SchedulerOutput& out, int32_t budget);
  void preempt(Request* r);
  void finish(Request* r);
  void extend_block_hashes(Request& r) const;
  void free_request_blocks(Request& r);

  int32_t max_running_;
  int32_t max_tokens_per_step_;
  int32_t block_size_;
  int32_t state_blocks_;
  BlockPool& pool_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;  // admission order: back = most recently admitted
  std::unordered_map<int32_t, Request*> by_id_;
};

}  // namespace kv
