// request.h — one generation request as the scheduler and the engine see it: plain data.
//
// A request's token sequence is its prompt followed by the tokens generated so far. The
// scheduler owns the cache-side fields (num_computed_tokens, block_ids, block_hashes, status);
// the engine reads them to build each step and never writes them.
#pragma once

#include <cstdint>
#include <vector>

namespace kv {

enum class RequestStatus { waiting, running, finished };

struct Request {
  int32_t id = 0;
  std::vector<int32_t> prompt;
  int32_t max_new_tokens = 1;
  int32_t arrival_step = 0;  // first step at which the scheduler may admit it

  std::vector<int32_t> output;         // generated tokens
  int32_t num_computed_tokens = 0;     // tokens computed (their KV is in the cache)
  std::vector<int32_t> block_ids;      // the block table: block i holds positions [i*bs, (i+1)*bs)
  std::vector<uint64_t> block_hashes;  // chained hashes of the sequence's full blocks
  int32_t state_block = -1;            // hybrid models: the linear-attention state block, or -1
  // Hybrid models with prefix caching: the leading blocks of the table that came from the prefix
  // cache. Their KV is there already, but the request computes their positions again for its
  // linear layers' state, and never writes them: they may be shared (scheduler.h).
  int32_t shared_prefix_blocks = 0;
  RequestStatus status = RequestStatus::waiting;
  int32_t num_preemptions = 0;

  int32_t num_tokens() const {
    return static_cast<int32_t>(prompt.size() + output.size());
  }
  int32_t token_at(int32_t pos) const {
    const auto p = static_cast<int32_t>(prompt.size());
    return pos < p ? prompt[pos] : output[pos - p];
  }
  bool done() const { return static_cast<int32_t>(output.size()) >= max_new_tokens; }
};

}  // namespace kv
