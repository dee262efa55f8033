// block_pool.h — the physical KV blocks: reference counts, the free queue, prefix-cache hashes.
//
// Modelled on vLLM v1's BlockPool with one KV cache group: every layer's cache is indexed by the
// same block ids. Block 0 is the reserved null block: never handed out, freed or cached.
//
// The free queue holds exactly the blocks with refcount 0. As in vLLM v1, every freed block goes to
// the back (the scheduler frees a request's blocks tail first, so its tail is evicted before its
// shareable head) and allocate() pops from the front: blocks never used are handed out before any
// freed one, and a freed block waits a whole turn of the queue before it is reused — which is why
// stale-data bugs stay hidden while the cache is fresh and show once it has been filled. Popping a
// block that still has a hash evicts it from the hash map then (lazy eviction), which is when its
// bytes become stale.
//
// The pool also records what the engine must do to the bytes after each scheduling step:
// blocks newly handed out, per group (zeroed per policy through that group's views), and blocks
// whose content became stale (poisoned when faults ask).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kv {

// Who a block is handed to. Hybrid models take both from the one pool (as vLLM's KV-cache groups
// share one): kv blocks back the attention-like layers' block tables, state blocks hold a
// linear layer's recurrent state (one per request). The same bytes mean different things to each.
enum class BlockGroup { kv, state };

class BlockPool {
 public:
  static constexpr int32_t kNullBlock = 0;
  static constexpr uint64_t kRootHash = 0x6b7663616368ull;  // parent of a sequence's first block

  BlockPool(int32_t num_blocks, bool prefix_caching);

  // ---- allocation (check, then act) ----
  int32_t num_blocks() const { return static_cast<int32_t>(ref_.size()); }
  int32_t num_free_blocks() const { return num_free_; }
  bool can_allocate(int32_t n) const { return n <= num_free_; }
  // Throws std::logic_error when !can_allocate(n).
  std::vector<int32_t> allocate(int32_t n, BlockGroup group = BlockGroup::kv);
  // Drops one reference per block; pass a request's blocks tail first so its tail is evicted
  // before its head.
  void free_blocks(const std::vector<int32_t>& blocks);

  // ---- prefix caching (no-ops / empty when disabled) ----
  bool prefix_caching() const { return prefix_caching_; }
  static uint64_t hash_block(uint64_t parent_hash, const int32_t* tokens, int32_t n);
  // The blocks holding the longest run of leading `hashes`; takes no references.
  std::vector<int32_t> find_cached_prefix(const std::vector<uint64_t>& hashes) const;
  // Takes a reference on each block (a prefix hit), pulling it out of the free queue if unused.
  void touch(const std::vector<int32_t>& blocks);
  // Registers a full block under `hash`. A hash already mapped to another block keeps that block.
  void cache_block(int32_t block, uint64_t hash);

  // ---- events since the last take (each list holds a block at most once) ----
  // Blocks newly handed out that `group` holds now (a block freed and handed to the other group
  // before the take counts for the one that holds it last).
  std::vector<int32_t> take_newly_allocated(BlockGroup group = BlockGroup::kv);
  std::vector<int32_t> take_released();  // freed without a hash, or evicted by allocate()

  // ---- inspection ----
  int32_t ref_count(int32_t block) const { return ref_.at(block); }
  std::optional<uint64_t> block_hash(int32_t block) const;
  std::vector<int32_t> free_queue() const;  // front (next to allocate) to back
  int64_t num_prefix_hits() const { return prefix_hits_; }  // blocks taken by touch()
  int64_t num_evictions() const { return evictions_; }      // cached blocks evicted by allocate()
  int64_t num_allocations() const { return allocations_; }  // blocks handed out by allocate()
  // Blocks allocate() handed to `group` that it had handed out before (to either group).
  int64_t num_recycled(BlockGroup group) const { return recycled_[static_cast<size_t>(group)]; }

 private:
  void push_back(int32_t b);
  void unlink(int32_t b);
  bool in_queue(int32_t b) const { return prev_[b] != kNone; }
  void check_block(int32_t b) const;  // a real block id: 1..n-1
  static void note(std::vector<int32_t>& list, std::vector<uint8_t>& seen, int32_t b);

  static constexpr int32_t kNone = -1;

  bool prefix_caching_;
  std::vector<int32_t> ref_;
  // Doubly linked free queue over block ids; index num_blocks is the sentinel (head and tail).
  std::vector<int32_t> prev_, next_;
  int32_t sentinel_;
  int32_t num_free_ = 0;

  std::vector<uint8_t> has_hash_;
  std::vector<uint64_t> hash_;
  std::unordered_map<uint64_t, int32_t> cached_;  // hash -> block

  std::vector<int32_t> newly_allocated_, released_;
  std::vector<BlockGroup> group_;  // per block: the group that took it last
  std::vector<uint8_t> in_newly_allocated_, in_released_;
  std::vector<uint8_t> handed_out_;  // per block: allocate() has handed it out before

  int64_t prefix_hits_ = 0, evictions_ = 0, allocations_ = 0;
  std::array<int64_t, 2> recycled_{};  // per BlockGroup
};

}  // namespace kv
