// test_scheduler.cpp — Scheduler driven by a fake model over a shadow KV cache.
//
// The fake model "stores" each computed token's id in its cache slot and samples a token that is
// a fixed function of (request, position). Before computing a chunk it checks that the context
// read through the block table holds exactly the request's tokens, so a block handed out twice,
// a stale prefix hit or a table that misses a block shows up as a wrong context. Released blocks
// are poisoned and new ones zeroed in the engine's order (poison, then zero).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/block_pool.h"
#include "engine/scheduler.h"
#include "engine/workload.h"

namespace kv {
namespace {

constexpr int32_t kPoisoned = -1, kZeroed = -2;

int32_t fake_token(int32_t id, int32_t pos) { return (id * 131 + pos * 17 + 3) % 101; }

Request make_request(int32_t id, int32_t prompt_len, int32_t max_new, int32_t arrival = 0) {
  Request r;
  r.id = id;
  for (int32_t i = 0; i < prompt_len; ++i) r.prompt.push_back((id * 7 + i * 3) % 50);
  r.max_new_tokens = max_new;
  r.arrival_step = arrival;
  return r;
}

EngineSpec engine_spec(int32_t budget, int32_t max_running, bool prefix) {
  EngineSpec e;
  e.max_tokens_per_step = budget;
  e.max_running_requests = max_running;
  e.prefix_caching = prefix;
  return e;
}

// "id:start+n" per chunk, with "d" for a decode and "s" when it samples: compact to compare.
std::string chunks_of(const SchedulerOutput& out) {
  std::string s;
  for (const auto& c : out.chunks) {
    s += (s.empty() ? "" : " ") + std::to_string(c.request_id) + ":" + std::to_string(c.start) +
         "+" + std::to_string(c.num_tokens) + (c.is_decode ? "d" : "") + (c.samples ? "s" : "");
  }
  return s;
}

struct Sim {
  Sim(const EngineSpec& e, int32_t num_blocks, int32_t block_size, std::vector<Request> rs,
      int32_t state_blocks = 0)
      : spec(e),
        bs(block_size),
        state_blocks(state_blocks),
        pool(num_blocks, e.prefix_caching),
        sched(e, block_size, pool, state_blocks),
        reqs(std::move(rs)),
        kv(num_blocks, std::vector<int32_t>(block_size, kZeroed)) {
    for (auto& r : reqs) sched.add(&r);  // reqs never reallocates after this
  }

  int32_t blocks_for(int32_t n) const { return (n + bs - 1) / bs; }

  // One engine step: schedule, check, "run" the chunks, update. Returns the schedule.
  SchedulerOutput step() {
    std::set<int32_t> running_before;
    for (const Request* r : sched.running()) running_before.insert(r->id);
    SchedulerOutput out = sched.schedule(step_no);
    for (int32_t b : pool.take_released()) std::fill(kv[b].begin(), kv[b].end(), kPoisoned);
    // The pool says which group took each new block: state blocks are exactly the running
    // requests' state blocks, KV blocks never are.
    std::set<int32_t> held_state;
    for (const Request* r : sched.running())
      if (r->state_block >= 0) held_state.insert(r->state_block);
    for (BlockGroup g : {BlockGroup::kv, BlockGroup::state})
      for (int32_t b : pool.take_newly_allocated(g)) {
        EXPECT_EQ(held_state.count(b) == 1, g == BlockGroup::state) << "block " << b;
        std::fill(kv[b].begin(), kv[b].end(), kZeroed);
      }
    check_schedule(out, running_before);
    if (::testing::Test::HasFatalFailure()) return out;
    std::vector<int32_t> sampled(out.chunks.size(), -7);
    for (size_t i = 0; i < out.chunks.size(); ++i) {
      const ScheduledChunk& c = out.chunks[i];
      const Request& r = *sched.find(c.request_id);
      if (state_blocks > 0) {  // the recurrent state: slot 0 of the state block says whose, how far
        EXPECT_EQ(kv[r.state_block][0], c.start == 0 ? kZeroed : state_code(r.id, c.start))
            << "request " << r.id << " reads a wrong state";
        if (c.start == 0) kv[r.state_block][0] = kZeroed;  // the kernel starts from zero
        kv[r.state_block][0] = state_code(r.id, c.start + c.num_tokens);
      }
      for (int32_t p = 0; p < c.start; ++p) {
        EXPECT_EQ(kv[r.block_ids[p / bs]][p % bs], r.token_at(p))
            << "request " << r.id << " reads a wrong context at position " << p;
      }
      for (int32_t p = c.start; p < c.start + c.num_tokens; ++p) {
        const int32_t b = r.block_ids[p / bs];
        if (p / bs < r.shared_prefix_blocks) {  // recomputed from a prefix hit: not written
          EXPECT_EQ(kv[b][p % bs], r.token_at(p)) << "request " << r.id << " shares block " << b
                                                  << " that does not hold its prefix";
          ++recomputed_hit_tokens;
          continue;
        }
        EXPECT_EQ(pool.ref_count(b), 1) << "writing into shared block " << b;
        kv[b][p % bs] = r.token_at(p);
      }
      if (c.samples) sampled[i] = fake_token(r.id, r.num_tokens());
    }
    prefix_hits += out.prefix_hit_blocks;
    computed_tokens += out.num_tokens();
    sched.update(out, sampled);
    ++step_no;
    return out;
  }

  void check_schedule(const SchedulerOutput& out, const std::set<int32_t>& running_before) {
    ASSERT_LE(out.num_tokens(), spec.max_tokens_per_step);
    ASSERT_LE(static_cast<int32_t>(sched.running().size()), spec.max_running_requests);
    std::set<int32_t> ids;
    for (const ScheduledChunk& c : out.chunks) {
      const Request* r = sched.find(c.request_id);
      ASSERT_NE(r, nullptr);
      ASSERT_TRUE(ids.insert(c.request_id).second) << "request scheduled twice in one step";
      ASSERT_EQ(r->status, RequestStatus::running);
      ASSERT_GE(c.num_tokens, 1);
      ASSERT_EQ(c.start, r->num_computed_tokens);
      ASSERT_LE(c.start + c.num_tokens, r->num_tokens());
      ASSERT_EQ(c.samples, c.start + c.num_tokens == r->num_tokens());
      ASSERT_TRUE(!c.is_decode || c.num_tokens == 1);
      ASSERT_LE(r->arrival_step, out.step);
      ASSERT_TRUE(out.preempted.empty() || running_before.count(c.request_id))
          << "request " << c.request_id << " admitted in a step that preempted";
    }
    // Every block table covers exactly what is computed or about to be; reference counts are
    // the number of tables holding a block; nobody holds block 0.
    std::map<int32_t, int32_t> holders;
    for (const Request* r : sched.running()) {
      int32_t end = r->num_computed_tokens;
      for (const auto& c : out.chunks) {
        if (c.request_id == r->id) end = c.start + c.num_tokens;
      }
      // A hybrid request recomputing a prefix hit holds the hit's blocks from admission on.
      ASSERT_EQ(static_cast<int32_t>(r->block_ids.size()),
                std::max(blocks_for(end), r->shared_prefix_blocks))
          << "request " << r->id;
      ASSERT_TRUE(state_blocks > 0 || r->shared_prefix_blocks == 0) << "request " << r->id;
      const std::set<int32_t> distinct(r->block_ids.begin(), r->block_ids.end());
      ASSERT_EQ(distinct.size(), r->block_ids.size());
      for (int32_t b : r->block_ids) ++holders[b];
      if (state_blocks > 0) {
        ASSERT_GT(r->state_block, 0) << "request " << r->id;
        ASSERT_EQ(distinct.count(r->state_block), 0u);
        ++holders[r->state_block];
      } else {
        ASSERT_EQ(r->state_block, -1);
      }
    }
    ASSERT_EQ(holders.count(0), 0u);
    for (int32_t b = 1; b < pool.num_blocks(); ++b) ASSERT_EQ(pool.ref_count(b), holders[b]);
    for (const Request* r : sched.waiting()) {
      ASSERT_TRUE(r->block_ids.empty() && r->num_computed_tokens == 0 && r->state_block == -1 &&
                  r->shared_prefix_blocks == 0)
          << "request " << r->id;
    }
  }

  void run_to_completion() {
    while (sched.has_unfinished() && !::testing::Test::HasFatalFailure()) {
      ASSERT_LT(step_no, 100000) << "no progress";
      step();
    }
    for (const Request& r : reqs) {
      EXPECT_TRUE(r.status == RequestStatus::finished && r.block_ids.empty()) << "request " << r.id;
      ASSERT_EQ(static_cast<int32_t>(r.output.size()), r.max_new_tokens) << "request " << r.id;
      for (int32_t k = 0; k < r.max_new_tokens; ++k) {
        EXPECT_EQ(r.output[k], fake_token(r.id, static_cast<int32_t>(r.prompt.size()) + k));
      }
    }
    EXPECT_EQ(pool.num_free_blocks(), pool.num_blocks() - 1);  // every reference returned
  }

  int32_t num_preemptions() const {
    return std::accumulate(reqs.begin(), reqs.end(), 0,
                           [](int32_t n, const Request& r) { return n + r.num_preemptions; });
  }

  static int32_t state_code(int32_t id, int32_t tokens) { return 1000 + id * 100000 + tokens; }

  EngineSpec spec;
  int32_t bs;
  int32_t state_blocks;
  BlockPool pool;
  Scheduler sched;
  std::vector<Request> reqs;
  std::vector<std::vector<int32_t>> kv;  // [block][slot] -> token id stored there
  int32_t step_no = 0;
  int64_t prefix_hits = 0, computed_tokens = 0, recomputed_hit_tokens = 0;
};

std::vector<Request> random_requests(uint32_t seed, int32_t n, int32_t max_prompt,
                                     int32_t max_new, int32_t max_arrival) {
  std::mt19937 gen(seed);
  std::vector<Request> rs;
  for (int32_t i = 0; i < n; ++i) {
    rs.push_back(make_request(i, 1 + static_cast<int32_t>(gen() % max_prompt),
                              1 + static_cast<int32_t>(gen() % max_new),
                              static_cast<int32_t>(gen() % (max_arrival + 1))));
  }
  return rs;
}

TEST(Scheduler, RespectsBudgetAndMaxRunningEveryStep) {
  for (int32_t bs : {1, 3, 7, 16}) {
    for (int32_t budget : {1, 7, 16, 64}) {
      for (int32_t max_running : {1, 3, 8}) {
        for (bool prefix : {false, true}) {
          SCOPED_TRACE(testing::Message() << "bs " << bs << " budget " << budget << " running "
                                          << max_running << " prefix " << prefix);
          Sim sim(engine_spec(budget, max_running, prefix), 400, bs,
                  random_requests(bs * 100 + budget, 10, 30, 6, 4));
          bool mixed = false;
          while (sim.sched.has_unfinished() && !HasFatalFailure()) {
            const std::string chunks = chunks_of(sim.step());  // a decode is "+1d"
            const auto decodes = std::count(chunks.begin(), chunks.end(), 'd');
            const auto all = std::count(chunks.begin(), chunks.end(), ':');
            mixed = mixed || (decodes > 0 && decodes < all);
          }
          sim.run_to_completion();
          EXPECT_EQ(sim.num_preemptions(), 0);  // the pool is large enough for everyone
          EXPECT_TRUE(mixed || budget == 1 || max_running == 1);
        }
      }
    }
  }
}

TEST(Scheduler, ChunkedPrefillSplitsAtTheBudget) {
  for (int32_t budget : {1, 7, 16}) {
    SCOPED_TRACE(budget);
    std::vector<Request> rs = {make_request(0, 40, 3)};
    Sim sim(engine_spec(budget, 4, false), 20, 7, std::move(rs));
    for (int32_t pos = 0; pos < 40; pos += budget) {
      const int32_t n = std::min(budget, 40 - pos);
      EXPECT_EQ(chunks_of(sim.step()), "0:" + std::to_string(pos) + "+" + std::to_string(n) +
                                           (pos + n == 40 ? "s" : ""));
    }
    EXPECT_EQ(chunks_of(sim.step()), "0:40+1ds");
    EXPECT_EQ(chunks_of(sim.step()), "0:41+1ds");
    EXPECT_FALSE(sim.sched.has_unfinished());
    sim.run_to_completion();
  }
}

TEST(Scheduler, DecodesAndPrefillsShareAStep) {
  std::vector<Request> rs = {make_request(0, 5, 10, 0), make_request(1, 20, 2, 2)};
  Sim sim(engine_spec(8, 4, true), 30, 3, std::move(rs));
  sim.step();  // A's prompt
  sim.step();  // A's first decode
  EXPECT_EQ(chunks_of(sim.step()), "0:6+1ds 1:0+7");
  EXPECT_EQ(chunks_of(sim.step()), "0:7+1ds 1:7+7");
  EXPECT_EQ(chunks_of(sim.step()), "0:8+1ds 1:14+6s");
  EXPECT_EQ(chunks_of(sim.step()), "0:9+1ds 1:20+1ds");
  sim.run_to_completion();
}

TEST(Scheduler, PreemptsTheMostRecentlyAdmittedRequest) {
  // 4 usable blocks of 2 tokens; both prompts fill 2 blocks, so A's first decode needs B's.
  // C is waiting for blocks all along; the victim goes in front of it.
  std::vector<Request> rs = {make_request(0, 4, 3), make_request(1, 4, 3), make_request(2, 2, 1)};
  Sim sim(engine_spec(64, 4, false), 5, 2, std::move(rs));
  EXPECT_EQ(sim.step().chunks.size(), 2u);
  const auto out = sim.step();
  EXPECT_EQ(out.preempted, (std::vector<int32_t>{1}));
  EXPECT_EQ(chunks_of(out), "0:4+1ds");
  const Request& b = sim.reqs[1];
  EXPECT_EQ(b.status, RequestStatus::waiting);
  EXPECT_EQ(b.num_preemptions, 1);
  EXPECT_EQ(b.output.size(), 1u);  // generated tokens survive; their KV is recomputed
  ASSERT_EQ(sim.sched.waiting().size(), 2u);
  EXPECT_EQ(sim.sched.waiting().front(), &b);
  sim.run_to_completion();
}

TEST(Scheduler, ARequestCanPreemptItself) {
  // A (3 tokens) has room for its decode in its second block; B (4 tokens) does not.
  std::vector<Request> rs = {make_request(0, 3, 4), make_request(1, 4, 3)};
  Sim sim(engine_spec(64, 4, false), 5, 2, std::move(rs));
  sim.step();
  const auto out = sim.step();
  EXPECT_EQ(out.preempted, (std::vector<int32_t>{1}));
  EXPECT_EQ(chunks_of(out), "0:3+1ds");
  EXPECT_EQ(sim.sched.running().size(), 1u);
  sim.run_to_completion();
  EXPECT_EQ(sim.reqs[1].num_preemptions, 1);
}

TEST(Scheduler, NothingIsAdmittedInAStepThatPreempted) {
  // Budget 3, 4 usable blocks of 2. Step 2: A's decode takes the last block, B preempts itself;
  // B's first chunk (2 tokens, 1 block) would fit again, but admissions wait for the next step.
  std::vector<Request> rs = {make_request(0, 4, 3), make_request(1, 2, 3)};
  Sim sim(engine_spec(3, 4, false), 5, 2, std::move(rs));
  sim.step();  // A [0,3)
  sim.step();  // A [3,4), B [0,2)
  const auto out = sim.step();
  EXPECT_EQ(out.preempted, (std::vector<int32_t>{1}));
  EXPECT_EQ(chunks_of(out), "0:4+1ds");
  EXPECT_EQ(sim.pool.num_free_blocks(), 1);
  EXPECT_EQ(chunks_of(sim.step()), "0:5+1ds 1:0+2");
  sim.run_to_completion();
}

TEST(Scheduler, PreemptedRequestHitsItsOwnCachedBlocks) {
  std::vector<Request> rs = {make_request(0, 3, 2), make_request(1, 4, 3)};
  Sim sim(engine_spec(64, 4, true), 5, 2, std::move(rs));
  sim.step();
  EXPECT_EQ(sim.step().preempted, (std::vector<int32_t>{1}));  // and A finishes
  EXPECT_EQ(sim.reqs[0].status, RequestStatus::finished);
  const auto out = sim.step();
  EXPECT_EQ(out.prefix_hit_blocks, 2);
  EXPECT_EQ(chunks_of(out), "1:4+1ds");  // prompt from the cache, its sampled token recomputed
  sim.run_to_completion();
}

TEST(Scheduler, FinishedRequestsLoseTheirTailToEvictionFirst) {
  // 4 usable blocks of 2. R0 caches 3 full blocks and finishes; R1 needs 2 blocks: the unused
  // block 4 and R0's tail. R2 repeats R0's prompt and still finds R0's head.
  Request r0 = make_request(0, 6, 1, 0);
  Request r1 = make_request(1, 4, 1, 2);
  Request r2 = r0;
  r2.id = 2;
  r2.arrival_step = 4;
  r2.prompt.push_back(1);
  Sim sim(engine_spec(64, 4, true), 5, 2, {r0, r1, r2});
  while (sim.step_no < 4) sim.step();
  EXPECT_EQ(sim.pool.num_evictions(), 1);
  const auto out = sim.step();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.prefix_hit_blocks, 2);
  sim.run_to_completion();
}

TEST(Scheduler, NeverTakesEveryTokenFromTheCache) {
  for (int32_t prompt_len : {6, 7}) {
    SCOPED_TRACE(prompt_len);
    // Request 1 repeats request 0's prompt after request 0 finished.
    Request a = make_request(0, prompt_len, 1, 0);
    Request b = a;
    b.id = 1;
    b.arrival_step = 3;
    Sim sim(engine_spec(64, 4, true), 10, 3, {a, b});
    while (sim.step_no < 3) sim.step();
    const auto out = sim.step();
    // 6 tokens: 1 of its 2 full blocks from the cache; 7 tokens: both.
    EXPECT_EQ(out.prefix_hit_blocks, prompt_len == 6 ? 1 : 2);
    EXPECT_EQ(chunks_of(out), prompt_len == 6 ? "1:3+3s" : "1:6+1s");
    sim.run_to_completion();
  }
}

// 12 requests of 20 to 40 prompt tokens in 3 groups, each group's prompts sharing 16 tokens.
WorkloadSpec grouped_prefix_workload() {
  WorkloadSpec w;
  w.num_requests = 12;
  w.prompt_len = {20, 40};
  w.new_tokens = {2, 8};
  w.prefix_groups = 3;
  w.shared_prefix_len = 16;
  w.arrival_step = {0, 6};
  return w;
}

TEST(Scheduler, SharedPrefixesHitTheCacheAndSaveCompute) {
  const WorkloadSpec w = grouped_prefix_workload();
  int64_t computed[2] = {0, 0};
  for (bool prefix : {false, true}) {
    Sim sim(engine_spec(32, 4, prefix), 200, 3, make_workload(w, 7, 101));
    sim.run_to_completion();
    computed[prefix] = sim.computed_tokens;
    EXPECT_EQ(sim.pool.num_prefix_hits(), sim.prefix_hits);
    // With caching, at least 5 of the 12 requests hit the 5 blocks their group shares.
    EXPECT_TRUE(prefix ? sim.prefix_hits >= 5 * 5 : sim.prefix_hits == 0) << sim.prefix_hits;
  }
  EXPECT_LT(computed[1], computed[0]);
}

// Small pools over block sizes 1..16, prefix caching off and on, 6 seeds each: 10 random requests
// (half of them share a 10-token head when caching is on) in a pool that holds the largest
// (24 + 12 - 1 tokens, and its state blocks) alone, with a little slack. Seeds and budgets step by
// `seed_step` and `budget_step`. Returns the preemptions and the recomputed prefix-hit tokens.
struct SweepTotals {
  int32_t preemptions = 0;
  int64_t recomputed_hits = 0;
};

SweepTotals small_pool_sweep(uint32_t seed_step, uint32_t budget_step, int32_t state_blocks) {
  SweepTotals totals;
  for (int32_t bs : {1, 3, 7, 16}) {
    for (bool prefix : {false, true}) {
      for (uint32_t seed = 0; seed < 6; ++seed) {
        SCOPED_TRACE(testing::Message() << "bs " << bs << " prefix " << prefix << " seed " << seed);
        auto rs = random_requests(seed * seed_step + bs, 10, 24, 12, 3);
        if (prefix) {
          for (size_t i = 0; i < rs.size(); i += 2) {
            for (int32_t p = 0; p < std::min<int32_t>(10, rs[i].prompt.size()); ++p) {
              rs[i].prompt[p] = 40 + p;
            }
          }
        }
        const int32_t num_blocks =
            1 + state_blocks + (35 + bs - 1) / bs + static_cast<int32_t>(seed % 3);
        const int32_t budget = 1 + static_cast<int32_t>(seed * budget_step % 20);
        Sim sim(engine_spec(budget, 6, prefix), num_blocks, bs, std::move(rs), state_blocks);
        sim.run_to_completion();
        totals.preemptions += sim.num_preemptions();
        totals.recomputed_hits += sim.recomputed_hit_tokens;
      }
    }
  }
  return totals;
}

TEST(Scheduler, SmallPoolsPreemptAndEveryRequestStillFinishes) {
  EXPECT_GT(small_pool_sweep(17, 5, 0).preemptions, 20);
}

TEST(Scheduler, HybridRequestsHoldOneStateBlockFromTheSamePool) {
  const SweepTotals t = small_pool_sweep(31, 7, 1);
  EXPECT_GT(t.preemptions, 5);
  EXPECT_GT(t.recomputed_hits, 0);
}

// Prefix caching on a hybrid pool (scheduler.h): a hit shares the cached blocks, but the request
// computes from position 0 (its linear layers' state at the hit is unknown) and leaves the shared
// blocks as they are.
TEST(Scheduler, HybridPrefixHitsShareBlocksAndRecomputeEveryPosition) {
  for (int32_t budget : {4, 64}) {  // the first chunk ends inside the hit, or past it
    SCOPED_TRACE(budget);
    Request a = make_request(0, 7, 1, 0);  // caches 2 full blocks of 3
    Request b = a;
    b.id = 1;
    b.arrival_step = 3;
    b.prompt.push_back(9);
    b.max_new_tokens = 3;
    Sim sim(engine_spec(budget, 4, true), 12, 3, {a, b}, 1);
    while (sim.step_no < 3) sim.step();
    ASSERT_EQ(sim.reqs[0].status, RequestStatus::finished);
    const auto out = sim.step();
    EXPECT_EQ(out.prefix_hit_blocks, 2);
    EXPECT_EQ(chunks_of(out), budget == 4 ? "1:0+4" : "1:0+8s");  // from 0, not from 6
    const Request& r = sim.reqs[1];
    EXPECT_EQ(r.shared_prefix_blocks, 2);
    EXPECT_EQ(sim.pool.ref_count(r.block_ids[0]), 1);  // a's reference went with a: cached only
    sim.run_to_completion();
    EXPECT_EQ(sim.recomputed_hit_tokens, 6);  // the hit's 6 positions, each computed once more
  }
}

TEST(Scheduler, HybridPrefixCachingSavesBlocksNotCompute) {
  const WorkloadSpec w = grouped_prefix_workload();
  int64_t computed[2] = {0, 0}, allocated[2] = {0, 0};
  for (bool prefix : {false, true}) {
    for (int32_t budget : {5, 32}) {
      SCOPED_TRACE(testing::Message() << "prefix " << prefix << " budget " << budget);
      Sim sim(engine_spec(budget, 4, prefix), 200, 3, make_workload(w, 7, 101), 1);
      sim.run_to_completion();
      EXPECT_EQ(sim.num_preemptions(), 0);
      computed[prefix] += sim.computed_tokens;
      allocated[prefix] += sim.pool.num_allocations();
      EXPECT_TRUE(prefix ? sim.prefix_hits >= 5 * 5 : sim.prefix_hits == 0) << sim.prefix_hits;
      EXPECT_EQ(sim.recomputed_hit_tokens, 3 * sim.prefix_hits);  // blocks of 3
    }
  }
  EXPECT_EQ(computed[1], computed[0]);
  EXPECT_LT(allocated[1], allocated[0]);
}

TEST(Scheduler, AdmissionWaitsUntilTheStateBlockFitsToo) {
  BlockPool pool(4, false);  // 3 usable blocks of 4 tokens
  Scheduler sched(engine_spec(64, 4, false), 4, pool, 1);
  Request a = make_request(0, 8, 1);  // 2 KV blocks + 1 state block: the whole pool
  Request b = make_request(1, 2, 1);
  Request too_big = make_request(2, 10, 3);  // 3 KV blocks + a state block never fit
  sched.add(&a);
  sched.add(&b);
  EXPECT_THROW(sched.add(&too_big), std::invalid_argument);
  const auto out = sched.schedule(0);
  ASSERT_EQ(out.chunks.size(), 1u);  // b waits: no block left for its state
  EXPECT_EQ(a.block_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(a.state_block, 3);
  sched.update(out, {5});  // a finishes and frees everything, state block included
  EXPECT_EQ(a.state_block, -1);
  EXPECT_EQ(pool.num_free_blocks(), 3);
  const auto next = sched.schedule(1);
  ASSERT_EQ(next.chunks.size(), 1u);
  EXPECT_EQ(next.chunks[0].request_id, 1);
}

TEST(Scheduler, RejectsRequestsThatCanNeverFit) {
  BlockPool pool(4, false);  // 3 usable blocks of 4 tokens: at most 12 tokens of KV
  Scheduler sched(engine_spec(16, 2, false), 4, pool);
  Request fits = make_request(0, 10, 3);  // 12 tokens of KV: the last sample is never computed
  Request too_big = make_request(1, 10, 4);
  Request empty = make_request(2, 0, 3);
  EXPECT_NO_THROW(sched.add(&fits));
  EXPECT_THROW(sched.add(&too_big), std::invalid_argument);
  EXPECT_THROW(sched.add(&empty), std::invalid_argument);
}

TEST(Scheduler, UpdateRejectsAMismatchedSampleList) {
  BlockPool pool(8, false);
  Scheduler sched(engine_spec(16, 2, false), 4, pool);
  Request r = make_request(0, 5, 2);
  sched.add(&r);
  const auto out = sched.schedule(0);
  EXPECT_THROW(sched.update(out, {}), std::invalid_argument);
  sched.update(out, {42});
  EXPECT_EQ(r.output, (std::vector<int32_t>{42}));
  EXPECT_EQ(r.num_computed_tokens, 5);
  EXPECT_THROW(sched.update(out, {42}), std::logic_error);  // the same step twice
}

}  // namespace
}  // namespace kv
