// run_cost.cpp — estimate_run_cost: the sizes of what model_runner.cpp, model_weights.cpp,
// block_pool.cpp, ref_sequence.cpp, checker.cpp and workload.cpp allocate, computed from the
// scenario alone.
// Keep each item in step with the code it mirrors.
#include "check/run_cost.h"

#include <algorithm>
#include <cmath>

#include "engine/cache_layout.h"
#include "engine/request.h"
#include "kernels/block_count.cuh"
#include "kernels/decode_splits.h"

namespace kv {
namespace {

constexpr int64_t kFloat = 4, kDouble = 8, kInt = 4;
// The program itself, libraries and allocator arenas: the peak RSS of a tiny scenario's run
// (results/run-cost.md), less what the items below count for it.
constexpr int64_t kProgramBytes = 6 << 20;
// A std::map node or a heap block's bookkeeping, and a std::vector's own three pointers.
constexpr int64_t kNodeBytes = 64, kVectorBytes = 24;

double mean(Range r) { return 0.5 * (static_cast<double>(r.min) + r.max); }

int64_t count_of(const ModelSpec& m, LayerKind k) {
  return std::count(m.layers.begin(), m.layers.end(), k);
}

struct Shape {
  int64_t H, D, KVH, hidden, vocab, rank, rope, latent, q_dim;
  bool attention, mla, linear;
  int64_t attention_like() const { return attention || mla; }
};

Shape shape_of(const ModelSpec& m) {
  const int64_t rank = m.kv_lora_rank, rope = m.qk_rope_dim;
  return Shape{.H = m.num_q_heads, .D = m.head_dim, .KVH = m.num_kv_heads,
               .hidden = m.hidden_size, .vocab = m.vocab_size, .rank = rank, .rope = rope,
               .latent = rank + rope, .q_dim = int64_t{m.num_q_heads} * m.head_dim,
               .attention = has_layer(m, LayerKind::attention),
               .mla = has_layer(m, LayerKind::mla), .linear = has_layer(m, LayerKind::linear)};
}

// Floats of one layer's weights as the engine uploads them (model_runner.cpp upload_weights).
int64_t device_layer_floats(LayerKind k, const Shape& s) {
  const int64_t wo = s.hidden * s.q_dim;
  switch (k) {
    case LayerKind::attention:
      return s.q_dim * s.hidden + 2 * s.KVH * s.D * s.hidden + s.KVH * s.D + wo;
    case LayerKind::mla:
      return s.H * s.latent * s.hidden + s.latent * s.hidden + s.latent + s.H * s.D * s.rank + wo;
    case LayerKind::linear:
      return 3 * s.q_dim * s.hidden + s.H * s.hidden + s.H + wo;
  }
  return 0;
}

// Floats of one layer's weights as the host keeps them (model_weights.h: every field).
int64_t host_layer_floats(LayerKind k, const Shape& s) {
  if (k != LayerKind::mla) return device_layer_floats(k, s);
  return device_layer_floats(k, s) + s.q_dim * s.hidden + s.H * s.rope * s.hidden +
         s.H * s.D * s.rank;  // wqn, wqr, wuk: the reference's non-absorbed form
}

// What one reference sequence of `len` positions holds (ref_sequence.h, ref_layers.h).
int64_t reference_bytes(const ModelSpec& m, const Shape& s, int64_t len) {
  int64_t b = static_cast<int64_t>(m.layers.size()) * len * s.q_dim * kDouble  // out_
              + len * s.hidden * kDouble;                                     // final_hidden_
  for (LayerKind k : m.layers) {
    switch (k) {
      case LayerKind::attention: b += 2 * len * s.KVH * s.D * kFloat; break;
      case LayerKind::mla:
        b += len * s.latent * kFloat + 2 * len * s.q_dim * kDouble + s.H * len * kDouble;
        break;
      case LayerKind::linear: b += s.H * s.D * s.D * kDouble; break;
    }
  }
  return b;
}

void add(RunCost& c, std::string what, double bytes, bool on_device, std::string fields) {
  c.memory.push_back({std::move(what), static_cast<int64_t>(bytes), on_device, std::move(fields)});
}

// Multiply-adds of one token position through every layer's projections, about.
double projection_work(const ModelSpec& m) {
  const double q = static_cast<double>(m.num_q_heads) * m.head_dim;
  const double kv = static_cast<double>(m.num_kv_heads) * m.head_dim;
  double sum = 0;
  for (LayerKind k : m.layers) {
    const double latent = static_cast<double>(m.kv_lora_rank) + m.qk_rope_dim;
    const double width = k == LayerKind::mla ? (m.num_q_heads + 1) * latent : 2 * q + 2 * kv;
    sum += m.hidden_size * width;
  }
  return sum;
}

// Multiply-adds of one (query, key) pair of an attention-like layer, the widest kind.
double pair_work(const ModelSpec& m) {
  const double heads = m.num_q_heads;
  if (has_layer(m, LayerKind::mla)) return heads * (2.0 * m.kv_lora_rank + m.qk_rope_dim);
  return heads * 2.0 * m.head_dim;
}

}  // namespace

int64_t RunCost::device_bytes() const {
  int64_t b = 0;
  for (const auto& m : memory) b += m.on_device ? m.bytes : 0;
  return b;
}

int64_t RunCost::host_bytes() const {
  int64_t b = 0;
  for (const auto& m : memory) b += m.on_device ? 0 : m.bytes;
  return b;
}

RunCost estimate_run_cost(const Scenario& sc) {
  const ModelSpec& m = sc.model;
  const WorkloadSpec& w = sc.workload;
  const EngineSpec& e = sc.engine;
  const Shape s = shape_of(m);
  RunCost c;
  c.epochs = w.epochs;

  // ---- the engine, on the device (model_runner.cpp) ----
  int64_t device_floats = 2 * s.vocab * s.hidden, host_floats = 2 * s.vocab * s.hidden;
  for (LayerKind k : m.layers) {
    device_floats += device_layer_floats(k, s);
    host_floats += host_layer_floats(k, s);
  }
  add(c, "weights", static_cast<double>(device_floats * kFloat), true,
      "model.vocab_size, model.hidden_size, model.layers");
  add(c, "KV cache", static_cast<double>(plan_cache_layout(m, sc.cache).total_bytes()), true,
      "cache.num_blocks, cache.block_size, model.layers");

  int64_t rows = std::max(e.max_tokens_per_step, e.max_running_requests);
  for (int32_t size : e.cuda_graphs.capture_sizes) rows = std::max<int64_t>(rows, size);
  const int64_t longest = int64_t{w.prompt_len.max} + w.new_tokens.max;
  const int64_t table_stride = blocks_for_tokens(longest, sc.cache.block_size);
  const int64_t q_width = s.mla ? std::max(s.q_dim, s.H * s.latent) : s.q_dim;
  int64_t kv_width = s.linear ? s.q_dim : s.KVH * s.D;
  if (s.mla) kv_width = std::max(kv_width, s.latent);
  const int64_t head_out = s.mla ? std::max(s.D, s.rank) : s.D;
  const int64_t per_layer_out =
      s.q_dim * (static_cast<int64_t>(m.layers.size()) * 2 - count_of(m, LayerKind::linear));
  const int64_t row_floats = per_layer_out + 2 * s.hidden + q_width + 2 * kv_width + s.H +
                             s.H * s.rank + 2 * s.H * head_out + 2 * s.H + s.vocab + 1;
  const int64_t workspace = rows * row_floats * kFloat +
                            static_cast<int64_t>(decode_workspace_bytes(
                                rows, s.H, head_out, e.max_decode_splits)) +
                            rows * (2 * table_stride * kInt + 14 * kInt);  // graph inputs
  add(c, "step workspaces", static_cast<double>(workspace), true,
      "engine.max_tokens_per_step, model.vocab_size, model.num_q_heads");
  // The op checks (check/op_checker.h): each paged layer keeps its q rows, and a checked request
  // keeps each paged layer's K/V rows as read back from the cache.
  int64_t op_q_floats = 0, op_kv_floats = 0;
  if (sc.checks.op_drift)
    for (LayerKind k : m.layers) {
      if (k == LayerKind::linear) continue;
      op_q_floats += k == LayerKind::mla ? s.H * s.latent : s.q_dim;
      op_kv_floats += k == LayerKind::mla ? s.latent : 2 * s.KVH * s.D;
    }
  add(c, "op check q rows", static_cast<double>(rows * op_q_floats * kFloat), true,
      "checks.op_drift, engine.max_tokens_per_step, model.num_q_heads");
  // The gather of cached context (ctx_k, ctx_v) grows to the most context tokens of one step's
  // prefills: each running request's, or the whole pool's; the buffers it outgrew stay cached.
  const int64_t pool_tokens = (int64_t{sc.cache.num_blocks} - 1) * sc.cache.block_size;
  const int64_t context = std::min(int64_t{e.max_running_requests} * (longest - 1), pool_tokens);
  add(c, "context gather", s.attention_like() ? 2.0 * 2 * context * kv_width * kFloat : 0.0, true,
      "engine.max_running_requests, workload.prompt_len");

  // ---- the host side: weights, workload, checker, reference ----
  add(c, "weights (host copy)", static_cast<double>(host_floats * kFloat), false,
      "model.vocab_size, model.hidden_size, model.layers");
  const double mean_tokens = mean(w.prompt_len) + mean(w.new_tokens);
  const double blocks_per_request = mean_tokens / sc.cache.block_size + 1;
  const double per_request = sizeof(Request) + mean_tokens * kInt +
                             blocks_per_request * (kInt + 8) + 3 * kNodeBytes;
  const int64_t prefix_len = w.prefix_groups > 0 ? w.shared_prefix_len : 0;
  // BlockPool's per-block arrays (ref, prev, next, hash, group: 28 bytes; block_pool.h), and
  // with prefix caching a map entry per cached full block, at most those the workload fills.
  const double cached_blocks =
      e.prefix_caching ? std::min<double>(sc.cache.num_blocks, w.num_requests * blocks_per_request)
                       : 0.0;
  add(c, "block pool", 28.0 * (sc.cache.num_blocks + 1) + cached_blocks * kNodeBytes, false,
      "cache.num_blocks");
  add(c, "workload", w.num_requests * per_request +
                         w.prefix_groups * static_cast<double>(kVectorBytes + prefix_len * kInt),
      false, "workload.requests, workload.prefix_groups, workload.shared_prefix_len");
  // Epoch 1's tokens per request (epoch agreement), flags per request, one step's read-back.
  add(c, "checker",
      w.num_requests * (kNodeBytes + kVectorBytes + mean(w.new_tokens) * kInt + 4.0) +
          static_cast<double>(rows * (per_layer_out + op_q_floats) * kFloat),
      false, "workload.requests, engine.max_tokens_per_step");
  // "auto" is sampled wherever the reference is on the host (the GPU reference's memory is its
  // own, reference/cuda_layout.h).
  c.checked_requests = sc.checks.reference == ReferenceMode::full
                           ? w.num_requests
                           : std::min(w.num_requests, sc.checks.sampled_requests);
  // One reference per checked request that has started and not finished: at most the running
  // ones (a new request starts only when every preempted one runs again).
  const int64_t live = std::min<int64_t>(e.max_running_requests, c.checked_requests);
  c.references_at_once = std::max<int64_t>(1, live);
  add(c, "reference", static_cast<double>(live * reference_bytes(m, s, longest)), false,
      "engine.max_running_requests, workload.prompt_len, workload.new_tokens, checks.reference");
  add(c, "op check histories", static_cast<double>(live * longest * op_kv_floats * kFloat), false,
      "checks.op_drift, engine.max_running_requests, workload.prompt_len");
  add(c, "program", static_cast<double>(kProgramBytes), false, "");

  // ---- work ----
  c.tokens_per_epoch = static_cast<int64_t>(w.num_requests * (mean_tokens - 1));
  const double decode_rounds =
      std::ceil(static_cast<double>(w.num_requests) / e.max_running_requests) * mean(w.new_tokens);
  c.steps_per_epoch = static_cast<int64_t>(
      std::max(decode_rounds, std::ceil(c.tokens_per_epoch / double(e.max_tokens_per_step))));
  const int64_t attention_like =
      count_of(m, LayerKind::attention) + count_of(m, LayerKind::mla);
  c.reference_pairs =
      static_cast<int64_t>(c.checked_requests * attention_like * mean_tokens * mean_tokens / 2);
  c.work = c.epochs * (c.tokens_per_epoch * projection_work(m) +
                       2.0 * static_cast<double>(c.reference_pairs) * pair_work(m));
  return c;
}

}  // namespace kv
