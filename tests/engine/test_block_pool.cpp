// test_block_pool.cpp — BlockPool: free-queue order, reference counts, lazy eviction, events,
// prefix-cache lookups; plus a randomized run against a shadow model of every invariant.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "engine/block_pool.h"

namespace kv {
namespace {

std::vector<int32_t> iota_blocks(int32_t from, int32_t to) {  // [from, to)
  std::vector<int32_t> v;
  for (int32_t b = from; b < to; ++b) v.push_back(b);
  return v;
}

std::set<int32_t> as_set(const std::vector<int32_t>& v) { return {v.begin(), v.end()}; }

TEST(BlockPool, StartsWithEveryBlockButTheNullBlockInOrder) {
  BlockPool pool(7, true);
  EXPECT_EQ(pool.num_free_blocks(), 6);
  EXPECT_EQ(pool.free_queue(), iota_blocks(1, 7));
  EXPECT_TRUE(pool.can_allocate(6));
  EXPECT_FALSE(pool.can_allocate(7));
  EXPECT_THROW(BlockPool(1, false), std::invalid_argument);
}

TEST(BlockPool, AllocatePopsTheFrontAndThrowsWhenShort) {
  BlockPool pool(5, false);
  EXPECT_EQ(pool.allocate(2), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(pool.ref_count(1), 1);
  EXPECT_EQ(pool.num_free_blocks(), 2);
  EXPECT_THROW(pool.allocate(3), std::logic_error);
  EXPECT_EQ(pool.num_free_blocks(), 2);  // a refused allocation changes nothing
  EXPECT_EQ(pool.allocate(2), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(pool.num_allocations(), 4);
  EXPECT_TRUE(pool.allocate(0).empty());
}

TEST(BlockPool, FreedBlocksGoToTheBackNeverUsedOnesAreHandedOutFirst) {
  BlockPool pool(7, true);
  pool.allocate(5);  // 1..5; queue [6]
  pool.cache_block(2, 0x22);
  pool.cache_block(4, 0x44);
  pool.take_released();
  pool.free_blocks({5, 4, 3, 2, 1});  // tail first, as the scheduler frees
  EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(as_set(pool.take_released()), (std::set<int32_t>{1, 3, 5}));
  // Cached blocks stay findable while they wait in the queue.
  EXPECT_EQ(pool.find_cached_prefix({0x22}), (std::vector<int32_t>{2}));
}

TEST(BlockPool, AllocationEvictsCachedBlocksLazily) {
  BlockPool pool(5, true);
  pool.allocate(4);
  pool.cache_block(1, 0x11);
  pool.cache_block(2, 0x22);
  pool.free_blocks({4, 3, 2, 1});  // queue [4, 3, 2, 1]
  pool.take_released();
  EXPECT_EQ(pool.allocate(3), (std::vector<int32_t>{4, 3, 2}));
  EXPECT_EQ(pool.num_evictions(), 1);
  EXPECT_FALSE(pool.block_hash(2).has_value());
  EXPECT_TRUE(pool.find_cached_prefix({0x22}).empty());
  EXPECT_EQ(pool.find_cached_prefix({0x11}), (std::vector<int32_t>{1}));
  EXPECT_EQ(pool.take_released(), (std::vector<int32_t>{2}));  // evicted: now stale
}

TEST(BlockPool, ABlockCanBeBothReleasedAndNewlyAllocatedInOneStep) {
  BlockPool pool(3, false);
  pool.allocate(2);
  pool.take_newly_allocated();
  pool.free_blocks({1});
  EXPECT_EQ(pool.allocate(1), (std::vector<int32_t>{1}));
  EXPECT_EQ(pool.take_released(), (std::vector<int32_t>{1}));
  EXPECT_EQ(pool.take_newly_allocated(), (std::vector<int32_t>{1}));
  EXPECT_TRUE(pool.take_released().empty());  // taking empties the lists
  EXPECT_TRUE(pool.take_newly_allocated().empty());
}

// Hybrid models take KV and state blocks from one pool; the pool remembers which group took a
// new block, so the engine zeroes it through that group's views.
TEST(BlockPool, NewBlocksAreReportedPerGroup) {
  BlockPool pool(6, false);
  EXPECT_EQ(pool.allocate(2, BlockGroup::kv), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(pool.allocate(1, BlockGroup::state), (std::vector<int32_t>{3}));
  EXPECT_EQ(pool.allocate(1), (std::vector<int32_t>{4}));  // kv by default
  EXPECT_EQ(pool.take_newly_allocated(BlockGroup::state), (std::vector<int32_t>{3}));
  EXPECT_EQ(pool.take_newly_allocated(BlockGroup::kv), (std::vector<int32_t>{1, 2, 4}));
  // A block taken by one group, freed and handed to the other before the take is reported once,
  // under the group that holds it: its views are the ones that must be zeroed.
  pool.free_blocks({3});
  EXPECT_EQ(pool.allocate(1, BlockGroup::state), (std::vector<int32_t>{5}));
  pool.free_blocks({5});
  EXPECT_EQ(pool.allocate(2, BlockGroup::kv), (std::vector<int32_t>{3, 5}));
  EXPECT_TRUE(pool.take_newly_allocated(BlockGroup::state).empty());
  EXPECT_EQ(pool.take_newly_allocated(BlockGroup::kv), (std::vector<int32_t>{5, 3}));
}

TEST(BlockPool, RejectsDoubleFreesAndTheNullBlock) {
  BlockPool pool(4, true);
  pool.allocate(1);
  pool.free_blocks({1});
  EXPECT_THROW(pool.free_blocks({1}), std::logic_error);
  EXPECT_THROW(pool.free_blocks({0}), std::logic_error);
  EXPECT_THROW(pool.touch({0}), std::logic_error);
  EXPECT_THROW(pool.cache_block(1, 7), std::logic_error);  // unused blocks cannot be cached
}

TEST(BlockPool, HashIsChainedAndDeterministic) {
  const int32_t a[3] = {1, 2, 3}, b[3] = {1, 2, 4};
  const uint64_t h = BlockPool::hash_block(BlockPool::kRootHash, a, 3);
  EXPECT_EQ(h, BlockPool::hash_block(BlockPool::kRootHash, a, 3));
  EXPECT_NE(h, BlockPool::hash_block(BlockPool::kRootHash, b, 3));
  EXPECT_NE(h, BlockPool::hash_block(h, a, 3));  // same tokens, other parent
  EXPECT_NE(h, BlockPool::hash_block(BlockPool::kRootHash, a, 2));
}

TEST(BlockPool, SharedPrefixIsFoundAndTouchTakesReferences) {
  const int32_t bs = 3;
  const std::vector<int32_t> seq_a = {5, 6, 7, 8, 9, 10, 11, 12, 13};
  const std::vector<int32_t> seq_b = {5, 6, 7, 8, 9, 10, 99, 98, 97};
  auto hashes = [&](const std::vector<int32_t>& s) {
    std::vector<uint64_t> h;
    uint64_t parent = BlockPool::kRootHash;
    for (size_t i = 0; i + bs <= s.size(); i += bs) {
      h.push_back(parent = BlockPool::hash_block(parent, s.data() + i, bs));
    }
    return h;
  };
  BlockPool pool(8, true);
  const auto blocks = pool.allocate(3);
  const auto ha = hashes(seq_a);
  for (int i = 0; i < 3; ++i) pool.cache_block(blocks[i], ha[i]);
  pool.free_blocks({blocks[2], blocks[1], blocks[0]});

  const auto hits = pool.find_cached_prefix(hashes(seq_b));
  EXPECT_EQ(hits, (std::vector<int32_t>{blocks[0], blocks[1]}));
  EXPECT_EQ(pool.ref_count(blocks[0]), 0);  // finding takes no reference
  const int32_t free_before = pool.num_free_blocks();
  pool.touch(hits);
  EXPECT_EQ(pool.ref_count(blocks[0]), 1);
  EXPECT_EQ(pool.num_free_blocks(), free_before - 2);
  EXPECT_EQ(pool.num_prefix_hits(), 2);
  pool.touch(hits);  // a second user of the same blocks
  EXPECT_EQ(pool.ref_count(blocks[1]), 2);
  EXPECT_EQ(pool.num_free_blocks(), free_before - 2);
}

TEST(BlockPool, DuplicateHashKeepsTheFirstBlock) {
  BlockPool pool(4, true);
  pool.allocate(2);
  pool.cache_block(1, 0xabc);
  pool.cache_block(2, 0xabc);
  EXPECT_EQ(pool.find_cached_prefix({0xabc}), (std::vector<int32_t>{1}));
  EXPECT_FALSE(pool.block_hash(2).has_value());
  pool.take_released();
  pool.free_blocks({2});  // not cached: stale at once
  EXPECT_EQ(pool.take_released(), (std::vector<int32_t>{2}));
  EXPECT_THROW(pool.cache_block(1, 0xdef), std::logic_error);  // content of a full block is fixed
}

TEST(BlockPool, WithoutPrefixCachingNothingIsCached) {
  BlockPool pool(4, false);
  pool.allocate(2);
  pool.cache_block(1, 0x1);
  EXPECT_TRUE(pool.find_cached_prefix({0x1}).empty());
  pool.free_blocks({2, 1});
  EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{3, 2, 1}));  // never-used block 3 first
  EXPECT_EQ(as_set(pool.take_released()), (std::set<int32_t>{1, 2}));
}

// A random sequence of allocate / free / touch / cache, checked step by step against a shadow
// model of reference counts, hashes and the expected event lists.
TEST(BlockPool, RandomOperationsKeepEveryInvariant) {
  for (int32_t num_blocks : {2, 3, 9, 33}) {
    std::mt19937 gen(1234 + num_blocks);
    auto rnd = [&](int32_t n) { return static_cast<int32_t>(gen() % static_cast<uint32_t>(n)); };
    BlockPool pool(num_blocks, true);
    std::vector<int32_t> held;  // one entry per reference the test holds
    std::map<int32_t, uint64_t> cached;  // block -> hash, as the test expects
    std::set<int32_t> exp_released, exp_new;
    uint64_t next_hash = 1;

    for (int op = 0; op < 3000; ++op) {
      const int kind = rnd(4);
      if (kind == 0) {  // allocate
        const int32_t n = rnd(4);
        if (!pool.can_allocate(n)) {
          EXPECT_THROW(pool.allocate(n), std::logic_error);
          continue;
        }
        const auto queue = pool.free_queue();
        const auto got = pool.allocate(n);
        ASSERT_EQ(got, std::vector<int32_t>(queue.begin(), queue.begin() + n));
        for (int32_t b : got) {
          ASSERT_NE(b, 0);
          held.push_back(b);
          exp_new.insert(b);
          if (cached.erase(b)) exp_released.insert(b);  // lazy eviction
        }
      } else if (kind == 1 && !held.empty()) {  // free one reference
        const int32_t i = rnd(static_cast<int32_t>(held.size()));
        const int32_t b = held[i];
        held.erase(held.begin() + i);
        pool.free_blocks({b});
        if (pool.ref_count(b) == 0) {
          EXPECT_EQ(pool.free_queue().back(), b);
          if (!cached.count(b)) exp_released.insert(b);
        }
      } else if (kind == 2 && !cached.empty()) {  // prefix hit on a cached block
        auto it = std::next(cached.begin(), rnd(static_cast<int32_t>(cached.size())));
        const auto hit = pool.find_cached_prefix({it->second, 0xdeadull << 40});
        ASSERT_EQ(hit, (std::vector<int32_t>{it->first}));
        pool.touch(hit);
        held.push_back(it->first);
      } else if (kind == 3 && !held.empty()) {  // a held block became full
        const int32_t b = held[rnd(static_cast<int32_t>(held.size()))];
        if (!cached.count(b)) {
          cached[b] = next_hash;
          pool.cache_block(b, next_hash++);
        }
      }
      if (rnd(10) == 0) {
        EXPECT_EQ(as_set(pool.take_released()), exp_released);
        EXPECT_EQ(as_set(pool.take_newly_allocated()), exp_new);
        exp_released.clear();
        exp_new.clear();
      }

      // Invariants: refcounts match the shadow; in the queue iff unreferenced; block 0 never.
      std::map<int32_t, int32_t> refs;
      for (int32_t b : held) ++refs[b];
      const auto queue = pool.free_queue();
      ASSERT_EQ(static_cast<int32_t>(queue.size()), pool.num_free_blocks());
      const std::set<int32_t> in_queue(queue.begin(), queue.end());
      ASSERT_EQ(in_queue.size(), queue.size()) << "a block is queued twice";
      ASSERT_EQ(in_queue.count(0), 0u);
      ASSERT_EQ(pool.ref_count(0), 0);
      for (int32_t b = 1; b < num_blocks; ++b) {
        ASSERT_GE(pool.ref_count(b), 0);
        ASSERT_EQ(pool.ref_count(b), refs[b]) << "block " << b;
        ASSERT_NE(pool.ref_count(b) > 0, in_queue.count(b) == 1) << "block " << b;
        const auto h = pool.block_hash(b);
        ASSERT_EQ(h.has_value(), cached.count(b) == 1) << "block " << b;
        ASSERT_EQ(h.value_or(0), h ? cached[b] : 0);
      }
    }
    EXPECT_GT(pool.num_evictions(), 0) << "the run never exercised eviction";
  }
}

}  // namespace
}  // namespace kv
