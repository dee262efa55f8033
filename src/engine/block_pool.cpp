// block_pool.cpp — BlockPool: free queue, reference counts, prefix-cache hash map, events.
#include "engine/block_pool.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "util/rng.h"

namespace kv {

BlockPool::BlockPool(int32_t num_blocks, bool prefix_caching)
    : prefix_caching_(prefix_caching),
      ref_(num_blocks, 0),
      prev_(num_blocks + 1, kNone),
      next_(num_blocks + 1, kNone),
      sentinel_(num_blocks),
      has_hash_(num_blocks, 0),
      hash_(num_blocks, 0),
      group_(num_blocks, BlockGroup::kv),
      in_newly_allocated_(num_blocks, 0),
      in_released_(num_blocks, 0),
      handed_out_(num_blocks, 0) {
  if (num_blocks < 2) {
    throw std::invalid_argument("BlockPool needs at least 2 blocks (block 0 is reserved), got " +
                                std::to_string(num_blocks));
  }
  prev_[sentinel_] = next_[sentinel_] = sentinel_;
  for (int32_t b = 1; b < num_blocks; ++b) push_back(b);
}

// ---- free queue ----

void BlockPool::push_back(int32_t b) {
  // A block already queued would be linked twice and corrupt the queue (and every later
  // allocation): a refcount that reaches 0 twice is an engine bug to stop at, not to run on.
  if (in_queue(b)) {
    throw std::logic_error("BlockPool: block " + std::to_string(b) +
                           " returned to the free queue while already in it");
  }
  const int32_t last = prev_[sentinel_];
  prev_[b] = last;
  next_[b] = sentinel_;
  next_[last] = b;
  prev_[sentinel_] = b;
  ++num_free_;
}

void BlockPool::unlink(int32_t b) {
  next_[prev_[b]] = next_[b];
  prev_[next_[b]] = prev_[b];
  prev_[b] = next_[b] = kNone;
  --num_free_;
}

std::vector<int32_t> BlockPool::free_queue() const {
  std::vector<int32_t> q;
  q.reserve(num_free_);
  for (int32_t b = next_[sentinel_]; b != sentinel_; b = next_[b]) q.push_back(b);
  return q;
}

void BlockPool::check_block(int32_t b) const {
  if (b <= kNullBlock || b >= num_blocks()) {
    throw std::logic_error("BlockPool: invalid block id " + std::to_string(b));
  }
}

void BlockPool::note(std::vector<int32_t>& list, std::vector<uint8_t>& seen, int32_t b) {
  if (!seen[b]) {
    seen[b] = 1;
    list.push_back(b);
  }
}

// ---- allocation ----

std::vector<int32_t> BlockPool::allocate(int32_t n, BlockGroup group) {
  if (n < 0 || !can_allocate(n)) {
    throw std::logic_error("BlockPool: cannot allocate " + std::to_string(n) + " blocks, " +
                           std::to_string(num_free_) + " free");
  }
  std::vector<int32_t> out;
  out.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t b = next_[sentinel_];
    unlink(b);
    if (has_hash_[b]) {  // lazy eviction: the cached content dies only now
      auto it = cached_.find(hash_[b]);
      if (it != cached_.end() && it->second == b) cached_.erase(it);
      has_hash_[b] = 0;
      ++evictions_;
      note(released_, in_released_, b);
    }
    ref_[b] = 1;
    ++allocations_;
    if (handed_out_[b]) ++recycled_[static_cast<size_t>(group)];
    handed_out_[b] = 1;
    group_[b] = group;
    note(newly_allocated_, in_newly_allocated_, b);
    out.push_back(b);
  }
  return out;
}

void BlockPool::free_blocks(const std::vector<int32_t>& blocks) {
  for (int32_t b : blocks) {
    check_block(b);
    if (ref_[b] <= 0) {
      throw std::logic_error("BlockPool: block " + std::to_string(b) + " freed while unused");
    }
    if (--ref_[b] > 0) continue;
    push_back(b);  // cached content stays valid for prefix hits until evicted
    if (!has_hash_[b]) note(released_, in_released_, b);
  }
}

// ---- prefix caching ----

uint64_t BlockPool::hash_block(uint64_t parent_hash, const int32_t* tokens, int32_t n) {
  uint64_t h = splitmix64(parent_hash ^ 0x70726566697862ull);
  for (int32_t i = 0; i < n; ++i) h = splitmix64(h ^ static_cast<uint32_t>(tokens[i]));
  return splitmix64(h ^ static_cast<uint64_t>(n));
}

std::vector<int32_t> BlockPool::find_cached_prefix(const std::vector<uint64_t>& hashes) const {
  std::vector<int32_t> hits;
  if (!prefix_caching_) return hits;
  for (uint64_t h : hashes) {
    auto it = cached_.find(h);
    if (it == cached_.end()) break;
    hits.push_back(it->second);
  }
  return hits;
}

void BlockPool::touch(const std::vector<int32_t>& blocks) {
  for (int32_t b : blocks) {
    check_block(b);
    if (ref_[b] == 0) unlink(b);
    ++ref_[b];
    ++prefix_hits_;
  }
}

void BlockPool::cache_block(int32_t block, uint64_t hash) {
  if (!prefix_caching_) return;
  check_block(block);
  if (ref_[block] <= 0) {
    throw std::logic_error("BlockPool: caching unused block " + std::to_string(block));
  }
  if (has_hash_[block]) {
    if (hash_[block] != hash) {
      throw std::logic_error("BlockPool: block " + std::to_string(block) +
                             " cached again under a different hash");
    }
    return;
  }
  if (!cached_.emplace(hash, block).second) return;  // another block holds this content already
  has_hash_[block] = 1;
  hash_[block] = hash;
}

std::optional<uint64_t> BlockPool::block_hash(int32_t block) const {
  if (!has_hash_.at(block)) return std::nullopt;
  return hash_[block];
}

// ---- events ----

std::vector<int32_t> BlockPool::take_newly_allocated(BlockGroup group) {
  std::vector<int32_t> taken;
  std::erase_if(newly_allocated_, [&](int32_t b) {
    if (group_[b] != group) return false;
    in_newly_allocated_[b] = 0;
    taken.push_back(b);
    return true;
  });
  return taken;
}

std::vector<int32_t> BlockPool::take_released() {
  for (int32_t b : released_) in_released_[b] = 0;
  return std::exchange(released_, {});
}

}  // namespace kv
