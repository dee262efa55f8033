#include "engine/engine.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "kernels/block_count.cuh"
#include "kernels/decode_splits.h"

namespace kv {
namespace {

// Layer kinds whose decode kernel multiplies P·V over the whole last tile and so depends on new
// blocks being zeroed (our paged decode works that way, like FlashMLA).
bool multiplies_whole_tile(LayerKind k) { return k == LayerKind::attention || k == LayerKind::mla; }

std::vector<LayerKind> intersect(const std::vector<LayerKind>& a, std::initializer_list<LayerKind> b) {
  std::vector<LayerKind> out;
  for (LayerKind k : a)
    if (std::find(b.begin(), b.end(), k) != b.end()) out.push_back(k);
  return out;
}

// The step's share of the coverage counters (epoch_counters.h).
// Splits the built-in planner gives the step's decode rows past their last token.
int64_t empty_splits(const Scenario& s, const StepPlan& p, int32_t max_splits) {
  if (s.engine.decode_splits != DecodeSplits::uniform || p.num_decode == 0) return 0;
  const std::vector<int32_t> lens(p.decode_seq_lens.begin(),
                                  p.decode_seq_lens.begin() + p.num_decode);
  const std::vector<int32_t> meta =
      plan_decode_splits_for(s.cache.dtype, lens, s.cache.block_size, max_splits, true);
  int64_t empty = 0;
  for (int32_t r = 0; r < p.num_decode; ++r) {
    const int32_t needed = (lens[r] + meta[0] - 1) / meta[0];
    empty += meta[kDecodeMetaHeader + r] - needed;
  }
  return empty;
}

void count_mechanisms(const StepPlan& p, int32_t block_size, EpochCounters& c) {
  if (p.use_graph) {
    ++c.graph_replays;
    c.padded_rows_replayed += p.padded_rows - p.num_rows;
    for (int32_t r = 0; r < p.num_decode; ++r)
      c.replayed_multiblock_rows += p.decode_seq_lens[r] > block_size ? 1 : 0;
  }
  c.prefill_rows_without_context += p.prefill_rows() - p.prefill_tokens_with_context;
  c.prefill_context_tokens += p.total_context_tokens();
  const bool without_context = p.num_prefill_seqs > p.num_context_seqs;
  c.mixed_prefill_steps += p.num_context_seqs > 0 && without_context ? 1 : 0;
}

}  // namespace

PlanLimits Engine::plan_limits(const Scenario& s, PadContract pad) {
  PlanLimits l;
  l.pad_seq_len = pad.seq_len;
  l.pad_block_id = pad.block_id;
  l.block_size = s.cache.block_size;
  const int32_t longest = s.workload.prompt_len.max + s.workload.new_tokens.max;
  l.block_table_stride = blocks_for_tokens(longest, l.block_size);
  l.max_decode_splits = s.engine.max_decode_splits;
  if (s.engine.cuda_graphs.mode == GraphMode::decode) l.capture_sizes = s.engine.cuda_graphs.capture_sizes;
  l.fp8_decode = s.cache.dtype == DType::fp8_e4m3;
  return l;
}

Engine::Engine(const Scenario& s, Device& dev)
    : s_(s),
      weights_(make_model_weights(s.model, s.cache)),
      limits_(plan_limits(s, dev.padding())),
      pool_(s.cache.num_blocks, s.engine.prefix_caching),
      runner_(s, weights_, dev, limits_),
      fill_seed_(s.seed * 0x9e3779b97f4a7c15ull + 17) {
  spdlog::debug("engine: {} layers, {} blocks of {}, {} graphs captured", s.model.layers.size(),
                s.cache.num_blocks, s.cache.block_size, runner_.graphs_captured());
}

std::vector<LayerKind> Engine::zeroed_kinds() const {
  std::vector<LayerKind> kinds = s_.engine.zero_new_blocks;
  // The seed-000 bug: the policy forgets the whole-tile kernels.
  if (s_.regressions.has(Regression::new_blocks_not_zeroed))
    std::erase_if(kinds, multiplies_whole_tile);
  return kinds;
}

void Engine::apply_block_events() {
  // Released first, then newly allocated: an evicted block is poisoned, then zeroed on reuse.
  const std::vector<int32_t> released = pool_.take_released();
  if (s_.faults.freed_blocks != PoisonPattern::none)
    runner_.fill_blocks(released, to_fill(s_.faults.freed_blocks), s_.model.layers, fill_seed_++);
  // A new block is zeroed through the views of the group that took it (vLLM keeps new_block_ids
  // per KV-cache group): KV blocks in the attention-like layers the policy lists, state blocks in
  // the linear layers if it lists "linear".
  const std::vector<LayerKind> kinds = zeroed_kinds();
  runner_.fill_blocks(pool_.take_newly_allocated(BlockGroup::kv), FillPattern::zero,
                      intersect(kinds, {LayerKind::attention, LayerKind::mla}), 0);
  runner_.fill_blocks(pool_.take_newly_allocated(BlockGroup::state), FillPattern::zero,
                      intersect(kinds, {LayerKind::linear}), 0);
}

int64_t Engine::next_busy_step(int64_t idle_step, const Scheduler& sched) {
  // With requests running, the next step serves them. With none, nothing changes until the next
  // arrival: the steps in between would schedule nothing, so the clock jumps there at once. They
  // would still each have drawn a freed-block fill seed (apply_block_events): so do they here.
  if (!sched.running().empty()) return idle_step + 1;
  const int64_t next = std::max(idle_step + 1, sched.next_arrival());
  if (s_.faults.freed_blocks != PoisonPattern::none)
    fill_seed_ += static_cast<uint64_t>(next - idle_step - 1);
  return next;
}

EpochCounters Engine::run_epoch(std::vector<Request>& requests, const StepObserver& on_step,
                                const std::function<bool()>& stop) {
  EpochCounters c;
  Scheduler sched(s_.engine, s_.cache.block_size, pool_, has_layer(s_.model, LayerKind::linear) ? 1 : 0);
  const RunnerTiming timing_before = runner_.timing();
  for (auto& r : requests) sched.add(&r);
  const int64_t allocations_before = pool_.num_allocations();
  const int64_t recycled_before = pool_.num_recycled(BlockGroup::kv);
  // The scheduler's clock: arrival steps are read against it. 64-bit, so a request arriving at
  // step 2^31 - 1 is fine; it counts idle steps too, which are skipped, not run.
  int64_t step = 0;
  while (sched.has_unfinished()) {
    if (stop && stop()) break;
    SchedulerOutput out = sched.schedule(step);
    apply_block_events();
    c.preemptions += static_cast<int64_t>(out.preempted.size());
    c.prefix_hit_blocks += out.prefix_hit_blocks;
    c.boundary_prefix_hits += out.boundary_prefix_hits;
    if (out.chunks.empty()) {  // nothing has arrived yet (or everything waits on preemption)
      step = next_busy_step(step, sched);
      continue;
    }
    const StepPlan plan = build_step_plan(out, sched, limits_);
    runner_.forward(plan);
    StepOutputs outputs = runner_.read_outputs(plan);
    // Plan rows are reordered; hand the scheduler one sampled token per chunk, in its order.
    // NaN logits give -1; a real engine emits some token anyway: keep the run going with 0.
    std::vector<int32_t> sampled(out.chunks.size(), 0);
    for (size_t j = 0; j < plan.chunks.size(); ++j)
      if (plan.chunks[j].samples)
        sampled[plan.chunk_source[j]] = std::max(0, outputs.sampled[plan.chunk_last_row(j)]);
    on_step(c.steps, plan, std::move(outputs), sched);
    int64_t cached = plan.num_rows;  // this step's tokens are in the cache now, on top of the old
    for (const Request* r : sched.running()) cached += r->num_computed_tokens;
    c.peak_cached_tokens = std::max(c.peak_cached_tokens, cached);

    sched.update(out, sampled);
    count_mechanisms(plan, s_.cache.block_size, c);
    c.empty_decode_splits += empty_splits(s_, plan, limits_.max_decode_splits);
    c.tokens += plan.num_rows;
    ++c.steps;
    ++step;
  }
  c.blocks_allocated = pool_.num_allocations() - allocations_before;
  c.blocks_recycled = pool_.num_recycled(BlockGroup::kv) - recycled_before;
  c.usable_blocks = pool_.num_blocks() - 1;
  c.forward_seconds = runner_.timing().forward_seconds - timing_before.forward_seconds;
  c.zero_init_seconds = runner_.timing().zero_init_seconds - timing_before.zero_init_seconds;
  return c;
}

}  // namespace kv
