// scheduler.cpp — Scheduler: running requests first, preemption by recompute, admissions with
// prefix-cache hits, and the bookkeeping after each step.
#include "engine/scheduler.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/block_count.cuh"

namespace kv {

int32_t SchedulerOutput::num_tokens() const {
  int32_t n = 0;
  for (const auto& c : chunks) n += c.num_tokens;
  return n;
}

Scheduler::Scheduler(const EngineSpec& spec, int32_t block_size, BlockPool& pool,
                     int32_t state_blocks)
    : max_running_(spec.max_running_requests),
      max_tokens_per_step_(spec.max_tokens_per_step),
      block_size_(block_size),
      state_blocks_(state_blocks),
      pool_(pool) {
  if (max_running_ < 1 || max_tokens_per_step_ < 1 || block_size_ < 1) {
    throw std::invalid_argument("Scheduler: max_running_requests, max_tokens_per_step and "
                                "block_size must be positive");
  }
  if (state_blocks_ < 0 || state_blocks_ > 1) {
    throw std::invalid_argument("Scheduler: a request holds 0 or 1 state blocks");
  }
}

void Scheduler::add(Request* r) {
  if (r->prompt.empty() || r->max_new_tokens < 1) {
    throw std::invalid_argument("request " + std::to_string(r->id) +
                                ": needs a non-empty prompt and max_new_tokens >= 1");
  }
  // The last sampled token is never computed, so a request holds at most this many tokens' KV.
  const int32_t most_tokens = static_cast<int32_t>(r->prompt.size()) + r->max_new_tokens - 1;
  const int32_t most_blocks = blocks_for(most_tokens) + state_blocks_;
  if (most_blocks > pool_.num_blocks() - 1) {
    throw std::invalid_argument(
        "request " + std::to_string(r->id) + " needs " + std::to_string(most_blocks) +
        " blocks but the pool has only " + std::to_string(pool_.num_blocks() - 1));
  }
  r->status = RequestStatus::waiting;
  waiting_.push_back(r);
  by_id_[r->id] = r;
}

Request* Scheduler::find(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

int64_t Scheduler::next_arrival() const {
  int64_t next = std::numeric_limits<int64_t>::max();
  for (const Request* r : waiting_) next = std::min<int64_t>(next, r->arrival_step);
  return next;
}

int32_t Scheduler::blocks_for(int32_t num_tokens) const {
  return blocks_for_tokens(num_tokens, block_size_);
}

ScheduledChunk Scheduler::make_chunk(const Request& r, int32_t start, int32_t n) const {
  ScheduledChunk c;
  c.request_id = r.id;
  c.start = start;
  c.num_tokens = n;
  c.is_decode = n == 1 && start >= static_cast<int32_t>(r.prompt.size());
  c.samples = start + n == r.num_tokens();
  return c;
}

// ---- schedule ----

SchedulerOutput Scheduler::schedule(int64_t step) {
  SchedulerOutput out;
  out.step = step;
  const int32_t budget = schedule_running(out, max_tokens_per_step_);
  // vLLM admits nothing in a step that preempted: the pool is too tight for new work.
  if (out.preempted.empty()) admit_waiting(out, budget);
  return out;
}

int32_t Scheduler::schedule_running(SchedulerOutput& out, int32_t budget) {
  size_t i = 0;
  while (i < running_.size() && budget > 0) {
    Request* r = running_[i];
    const int32_t start = r->num_computed_tokens;
    const int32_t n = std::min(r->num_tokens() - start, budget);
    const int32_t need =
        std::max(0, blocks_for(start + n) - static_cast<int32_t>(r->block_ids.size()));
    // Victims come from the back, which is at or after r: requests already served this step
    // are never preempted.
    while (!pool_.can_allocate(need) && running_.back() != r) {
      out.preempted.push_back(running_.back()->id);
      preempt(running_.back());
    }
    if (!pool_.can_allocate(need)) {
      out.preempted.push_back(r->id);
      preempt(r);
      break;
    }
    const auto fresh = pool_.allocate(need);
    r->block_ids.insert(r->block_ids.end(), fresh.begin(), fresh.end());
    out.chunks.push_back(make_chunk(*r, start, n));
    budget -= n;
    ++i;
  }
  return budget;
}

void Scheduler::admit_waiting(SchedulerOutput& out, int32_t budget) {
  auto it = waiting_.begin();
  while (it != waiting_.end() && budget > 0 &&
         static_cast<int32_t>(running_.size()) < max_running_) {
    Request* r = *it;
    if (r->arrival_step > out.step) {  // not visible yet: later arrivals may pass it
      ++it;
      continue;
    }
    std::vector<int32_t> hits;
    bool boundary_hit = false;
    if (pool_.prefix_caching()) {
      extend_block_hashes(*r);
      hits = pool_.find_cached_prefix(r->block_hashes);
      // At least the last token is computed, so the step yields logits to sample from. Only a
      // hit on every block of a block-aligned sequence goes past that.
      const auto most_hits = static_cast<size_t>((r->num_tokens() - 1) / block_size_);
      boundary_hit = hits.size() > most_hits;
      if (boundary_hit) hits.resize(most_hits);
    }
    const auto num_hits = static_cast<int32_t>(hits.size());
    // A request with recurrent state recomputes the hit's positions (scheduler.h).
    const bool recompute_hits = state_blocks_ > 0;
    const int32_t start = recompute_hits ? 0 : num_hits * block_size_;
    const int32_t n = std::min(r->num_tokens() - start, budget);
    const int32_t need = std::max(0, blocks_for(start + n) - num_hits) + state_blocks_;
    // Hit blocks with no user sit in the free queue: touching them takes them out of it.
    const auto unused_hits = static_cast<int32_t>(std::count_if(
        hits.begin(), hits.end(), [&](int32_t b) { return pool_.ref_count(b) == 0; }));
    if (pool_.num_free_blocks() - unused_hits < need) break;  // FCFS: nobody overtakes it

    pool_.touch(hits);
    // KV blocks first, then the state block, from one queue.
    const std::vector<int32_t> fresh = pool_.allocate(need - state_blocks_, BlockGroup::kv);
    if (state_blocks_ > 0) r->state_block = pool_.allocate(1, BlockGroup::state).front();
    r->block_ids = std::move(hits);
    r->block_ids.insert(r->block_ids.end(), fresh.begin(), fresh.end());
    r->shared_prefix_blocks = recompute_hits ? num_hits : 0;
    r->num_computed_tokens = start;
    r->status = RequestStatus::running;
    running_.push_back(r);
    out.prefix_hit_blocks += num_hits;
    out.boundary_prefix_hits += boundary_hit ? 1 : 0;
    out.chunks.push_back(make_chunk(*r, start, n));
    budget -= n;
    it = waiting_.erase(it);
  }
}

void Scheduler::preempt(Request* r) {
  running_.erase(std::find(running_.begin(), running_.end(), r));
  free_request_blocks(*r);
  r->block_hashes.clear();
  r->num_computed_tokens = 0;
  r->status = RequestStatus::waiting;
  ++r->num_preemptions;
  waiting_.push_front(r);
}

// ---- update ----

void Scheduler::update(const SchedulerOutput& out, const std::vector<int32_t>& sampled) {
  if (sampled.size() != out.chunks.size()) {
    throw std::invalid_argument("Scheduler::update: one sampled entry per chunk expected");
  }
  for (size_t i = 0; i < out.chunks.size(); ++i) {
    const ScheduledChunk& c = out.chunks[i];
    Request* r = find(c.request_id);
    if (r == nullptr || r->status != RequestStatus::running || r->num_computed_tokens != c.start) {
      throw std::logic_error("Scheduler::update: chunk for request " +
                             std::to_string(c.request_id) + " does not match its state");
    }
    const int32_t end = c.start + c.num_tokens;
    if (pool_.prefix_caching()) {
      // Blocks that became full this step; earlier ones were cached when they filled.
      for (int32_t b = c.start / block_size_; b < end / block_size_; ++b) {
        pool_.cache_block(r->block_ids[b], r->block_hashes[b]);
      }
    }
    r->num_computed_tokens = end;
    if (!c.samples) continue;
    r->output.push_back(sampled[i]);
    if (pool_.prefix_caching()) extend_block_hashes(*r);
    if (r->done()) finish(r);
  }
}

void Scheduler::finish(Request* r) {
  running_.erase(std::find(running_.begin(), running_.end(), r));
  free_request_blocks(*r);
  r->status = RequestStatus::finished;
}

// ---- helpers ----

void Scheduler::free_request_blocks(Request& r) {
  // Tail first, so that under LRU the request's tail is evicted before its (shareable) head.
  pool_.free_blocks(std::vector<int32_t>(r.block_ids.rbegin(), r.block_ids.rend()));
  r.block_ids.clear();
  r.shared_prefix_blocks = 0;
  if (r.state_block >= 0) pool_.free_blocks({r.state_block});
  r.state_block = -1;
}

void Scheduler::extend_block_hashes(Request& r) const {
  const int32_t full = r.num_tokens() / block_size_;
  std::vector<int32_t> tokens(block_size_);
  for (auto k = static_cast<int32_t>(r.block_hashes.size()); k < full; ++k) {
    for (int32_t j = 0; j < block_size_; ++j) tokens[j] = r.token_at(k * block_size_ + j);
    const uint64_t parent = k == 0 ? BlockPool::kRootHash : r.block_hashes[k - 1];
    r.block_hashes.push_back(BlockPool::hash_block(parent, tokens.data(), block_size_));
  }
}

}  // namespace kv
