#include "reference/cuda_layout.h"

#include <algorithm>
#include <stdexcept>

namespace kv {
namespace {

constexpr int64_t kAlign = 256;

int64_t aligned(int64_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

struct Dims {
  int64_t H, KVH, D, hidden, vocab, R, P, q_dim, L;
  explicit Dims(const ModelSpec& m)
      : H(m.num_q_heads), KVH(m.num_kv_heads), D(m.head_dim), hidden(m.hidden_size),
        vocab(m.vocab_size), R(m.kv_lora_rank), P(m.qk_rope_dim), q_dim(H * D),
        L(static_cast<int64_t>(m.layers.size())) {}
};

bool has(const ModelSpec& m, LayerKind k) {
  return std::find(m.layers.begin(), m.layers.end(), k) != m.layers.end();
}

}  // namespace

RefSlotLayout ref_slot_layout(const ModelSpec& m, int32_t capacity) {
  const Dims d(m);
  const int64_t cap = capacity;
  RefSlotLayout l;
  l.capacity = capacity;
  int64_t at = 0;
  auto take = [&](int64_t bytes) {
    const int64_t off = at;
    at += aligned(bytes);
    return off;
  };
  for (LayerKind k : m.layers) {
    RefLayerOffsets o;
    switch (k) {
      case LayerKind::attention:
        o.a = take(cap * d.KVH * d.D * 4);
        o.b = take(cap * d.KVH * d.D * 4);
        break;
      case LayerKind::mla:
        o.a = take(cap * (d.R + d.P) * 4);
        o.b = take(cap * d.q_dim * 8);
        o.c = take(cap * d.q_dim * 8);
        break;
      case LayerKind::linear: o.a = take(d.H * d.D * d.D * 8); break;
    }
    l.layers.push_back(o);
  }
  l.out = take(cap * d.L * d.q_dim * 8);
  l.hidden = take(cap * d.hidden * 8);
  l.ties = take(cap * d.L * 8);
  l.snapshot_bytes = d.H * d.D * d.D * 8 *
                     static_cast<int64_t>(std::count(m.layers.begin(), m.layers.end(),
                                                     LayerKind::linear));
  l.snapshots = take(kRefStateSnapshots * l.snapshot_bytes);
  l.bytes = at;
  return l;
}

int32_t ref_batch_rows(const ModelSpec& m) {
  // Scratch of about 256 MiB at most, and never fewer than 64 rows.
  const int64_t per_row = ref_scratch_bytes(m, 1);
  return static_cast<int32_t>(std::clamp<int64_t>((int64_t{256} << 20) / per_row, 64, 16384));
}

int64_t ref_scratch_bytes(const ModelSpec& m, int32_t rows) {
  const Dims d(m);
  // h, x: [hidden]; q (also q_nope), o, o_in: [q_dim]; k, v: [max kv width]; q_rope [H * P];
  // gate [H]; the engine's fp8 rows [layers][q_dim] (float); two tie records [layers] (the
  // computed and the kept, uint64); row descriptors.
  int64_t kv = d.KVH * d.D;
  if (has(m, LayerKind::linear)) kv = std::max(kv, d.q_dim);
  if (has(m, LayerKind::mla)) kv = std::max(kv, d.R + d.P);
  const int64_t q_rope = has(m, LayerKind::mla) ? d.H * d.P : 0;
  const int64_t doubles = 2 * d.hidden + 3 * d.q_dim + 2 * kv + q_rope + d.H + 2 * d.L;
  return rows * (doubles * 8 + d.L * d.q_dim * 4 + 32);
}

int64_t ref_weight_bytes(const ModelSpec& m) {
  const Dims d(m);
  int64_t floats = 2 * d.vocab * d.hidden;  // embed, lm_head
  for (LayerKind k : m.layers) {
    switch (k) {
      case LayerKind::attention:
        floats += d.q_dim * d.hidden + 2 * d.KVH * d.D * d.hidden + d.KVH * d.D;
        break;
      case LayerKind::mla:
        floats += (d.R + d.P) * (d.hidden + 1) + d.q_dim * d.hidden + d.H * d.P * d.hidden +
                  2 * d.q_dim * d.R;
        break;
      case LayerKind::linear: floats += 3 * d.q_dim * d.hidden + d.H * (d.hidden + 1); break;
    }
    floats += d.hidden * d.q_dim;  // wo
  }
  return floats * 4;
}

int64_t cuda_reference_bytes(const Scenario& s, ReferenceMode mode) {
  if (mode == ReferenceMode::automatic)
    throw std::logic_error("cuda_reference_bytes: resolve checks.reference first");
  const int64_t requests = s.workload.num_requests;
  const int64_t checked = mode == ReferenceMode::full
                              ? requests
                              : std::min<int64_t>(requests, s.checks.sampled_requests);
  // A request's history lives from its first checked chunk to its end: at most the running ones
  // (a new request starts only when every preempted one runs again; check/run_cost.h).
  const int64_t live = std::min<int64_t>(s.engine.max_running_requests, checked);
  const int32_t longest = s.workload.prompt_len.max + s.workload.new_tokens.max;
  const int32_t rows = ref_batch_rows(s.model);
  return ref_weight_bytes(s.model) + ref_scratch_bytes(s.model, rows) + kRefSplitScratchBytes +
         live * ref_slot_layout(s.model, longest).bytes;
}

}  // namespace kv
