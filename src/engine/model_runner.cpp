#include "engine/model_runner.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "util/stopwatch.h"

namespace kv {

FillPattern to_fill(PoisonPattern p) {
  switch (p) {
    case PoisonPattern::nan: return FillPattern::nan;
    case PoisonPattern::inf: return FillPattern::inf;
    case PoisonPattern::random_bits: return FillPattern::random_bits;
    case PoisonPattern::none: break;
  }
  return FillPattern::zero;
}

namespace {

template <class T>
DeviceBuffer buffer_of(Device& dev, size_t count) {
  return DeviceBuffer(dev, std::max<size_t>(count, 1) * sizeof(T));
}

template <class T>
DeviceBuffer upload_new(Device& dev, const std::vector<T>& v) {
  DeviceBuffer b = buffer_of<T>(dev, v.size());
  b.upload(v);
  return b;
}

}  // namespace

ModelRunner::ModelRunner(const Scenario& s, const ModelWeights& w, Device& dev,
                         const PlanLimits& limits)
    : s_(s), dev_(dev), limits_(limits) {
  const ModelSpec& m = s.model;
  const int32_t H = m.num_q_heads, D = m.head_dim;
  q_dim_ = H * D;
  hidden_ = m.hidden_size;
  latent_dim_ = m.kv_lora_rank + m.qk_rope_dim;
  q_width_max_ = q_dim_;
  kv_width_max_ = has_layer(m, LayerKind::linear) ? q_dim_ : m.num_kv_heads * D;
  head_out_max_ = D;
  if (has_layer(m, LayerKind::mla)) {
    q_width_max_ = std::max(q_width_max_, H * latent_dim_);
    kv_width_max_ = std::max(kv_width_max_, latent_dim_);
    head_out_max_ = std::max(head_out_max_, m.kv_lora_rank);
  }
  softmax_scale_ = w.softmax_scale;
  mla_softmax_scale_ = w.mla_softmax_scale;
  max_rows_ = s.engine.max_tokens_per_step;
  for (int32_t c : limits.capture_sizes) max_rows_ = std::max(max_rows_, c);
  max_rows_ = std::max(max_rows_, s.engine.max_running_requests);

  upload_weights(w);
  allocate_buffers();
  capture_graphs();
}

void ModelRunner::upload_weights(const ModelWeights& w) {
  embed_ = upload_new(dev_, w.embed);
  lm_head_ = upload_new(dev_, w.lm_head);
  layers_.resize(w.layers.size());
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    LayerBuffers& L = layers_[l];
    L.kind = s_.model.layers[l];
    switch (L.kind) {
      case LayerKind::attention:
        L.wq = upload_new(dev_, lw.wq);
        L.wk = upload_new(dev_, lw.wk);
        L.wv = upload_new(dev_, lw.wv);
        L.bias = upload_new(dev_, lw.bv);
        break;
      case LayerKind::mla:  // the engine runs absorbed: folded query weights, latent projection
        L.wq = upload_new(dev_, lw.wq_abs);
        L.wk = upload_new(dev_, lw.wdkv);
        L.bias = upload_new(dev_, lw.bdkv);
        L.wuv = upload_new(dev_, lw.wuv);
        break;
      case LayerKind::linear:
        L.wq = upload_new(dev_, lw.wq);
        L.wk = upload_new(dev_, lw.wk);
        L.wv = upload_new(dev_, lw.wv);
        L.wg = upload_new(dev_, lw.wg);
        L.bias = upload_new(dev_, lw.bg);
        break;
    }
    L.wo = upload_new(dev_, lw.wo);
  }
}

void ModelRunner::allocate_buffers() {
  const ModelSpec& m = s_.model;
  const CacheSpec& c = s_.cache;
  const size_t R = static_cast<size_t>(max_rows_);
  const size_t H = static_cast<size_t>(m.num_q_heads);
  const size_t splits = static_cast<size_t>(limits_.max_decode_splits);

  cache_plan_ = plan_cache_layout(m, c);
  // Refuse before allocating: the KV cache dominates what a scenario needs on the device. (The
  // run's estimate (check/run_cost.h) refuses first; this holds for any other caller.)
  if (const auto free = dev_.free_bytes();
      free && cache_plan_.total_bytes() > static_cast<int64_t>(*free))
    throw OutOfMemory(fmt::format(
        "the scenario's KV cache needs {:.2f} GiB ({} blocks of {} tokens, {} layers) but the {} "
        "device has {:.2f} GiB free: lower cache.num_blocks",
        cache_plan_.total_bytes() / 1073741824.0, c.num_blocks, c.block_size, m.layers.size(),
        dev_.name(), *free / 1073741824.0));
  for (int64_t bytes : cache_plan_.buffer_bytes)
    caches_.emplace_back(dev_, static_cast<size_t>(bytes));
  for (size_t l = 0; l < layers_.size(); ++l) {
    LayerBuffers& L = layers_[l];
    void* base = caches_[cache_plan_.buffer_of_layer[l]].as();
    if (L.kind == LayerKind::linear) {
      L.state = static_cast<float*>(base);
      L.state_stride = state_block_stride(m, cache_plan_);
      L.fill_view = state_fill_view(base, m, c, cache_plan_);
    } else {
      L.kv = layer_kv_view(base, L.kind, m, c, cache_plan_);
      L.fill_view = L.kv;
      L.quant = buffer_of<float>(dev_, R * q_dim_);
      if (s_.checks.op_drift) L.q = buffer_of<float>(dev_, R * static_cast<size_t>(q_width(L)));
    }
    L.attn_out = buffer_of<float>(dev_, R * q_dim_);
  }
  inputs_ = GraphInputs(dev_, max_rows_, limits_.block_table_stride);
  // One plan buffer per paged layer kind, each of the largest size a kind asks for; one decode
  // scratch of the largest size (the built-in decode's with the widest head output at least).
  const bool attention = has_layer(m, LayerKind::attention), mla = has_layer(m, LayerKind::mla);
  plan_bytes_ = 0;
  size_t workspace_bytes = dev_.decode_workspace_bytes(decode_shape(false, head_out_max_));
  for (bool latent : {false, true}) {
    if (!(latent ? mla : attention)) continue;
    plan_bytes_ = std::max(plan_bytes_, dev_.decode_plan_bytes(decode_shape(latent)));
    workspace_bytes = std::max(workspace_bytes, dev_.decode_workspace_bytes(decode_shape(latent)));
  }
  if (attention) attention_plan_ = DeviceBuffer(dev_, plan_bytes_);
  if (mla) mla_plan_ = DeviceBuffer(dev_, plan_bytes_);
  h_ = buffer_of<float>(dev_, R * hidden_);
  x_ = buffer_of<float>(dev_, R * hidden_);
  q_ = buffer_of<float>(dev_, R * q_width_max_);
  k_ = buffer_of<float>(dev_, R * kv_width_max_);
  v_ = buffer_of<float>(dev_, R * kv_width_max_);
  gate_ = buffer_of<float>(dev_, R * H);
  latent_out_ = buffer_of<float>(dev_, R * H * m.kv_lora_rank);
  ctx_out_ = buffer_of<float>(dev_, R * H * head_out_max_);
  ctx_lse_ = buffer_of<float>(dev_, R * H);
  new_out_ = buffer_of<float>(dev_, R * H * head_out_max_);
  new_lse_ = buffer_of<float>(dev_, R * H);
  // The decode's scratch: the built-in decode's partial outputs, then their lse (or whatever a
  // backend asks for, if more).
  decode_workspace_ = DeviceBuffer(dev_, workspace_bytes);
  partial_lse_offset_ = R * splits * H * head_out_max_;
  logits_ = buffer_of<float>(dev_, R * m.vocab_size);
  sampled_ = buffer_of<int32_t>(dev_, R);
}

void ModelRunner::capture_graphs() {
  for (int32_t size : limits_.capture_sizes) {
    const StepPlan p = build_capture_plan(size, limits_);
    inputs_.upload(p);
    const DecodePlans plans = plan_decode(p, graph_metadata_);  // the graph keeps these addresses
    dev_.begin_capture();
    launch(p, plans);
    graphs_[size] = dev_.end_capture();
  }
}

void ModelRunner::ensure_context_capacity(int32_t tokens) {
  if (tokens <= ctx_capacity_) return;
  ctx_capacity_ = std::max(tokens, 2 * ctx_capacity_);
  ctx_k_ = buffer_of<float>(dev_, static_cast<size_t>(ctx_capacity_) * kv_width_max_);
  ctx_v_ = buffer_of<float>(dev_, static_cast<size_t>(ctx_capacity_) * kv_width_max_);
}

// The decode plan step, into the buffer the step's decode will read. The fix (and every bf16
// cache): the persistent plan buffer, so a graph replay reads this step's plan. The seed-003 bug
// (graph-metadata-not-persistent on an fp8 cache): the fp8 path plans into a fresh buffer each
// step; an eager step reads it, but a graph captured over an earlier one keeps reading that one.
// `keep` owns the fresh buffer for as long as its reader runs: the step, or the graph.
ModelRunner::DecodePlans ModelRunner::plan_decode(const StepPlan& p,
                                                  std::vector<DeviceBuffer>& keep) {
  const bool fresh =
      s_.regressions.has(Regression::graph_metadata_not_persistent) && limits_.fp8_decode;
  // One kind's plan: into its persistent buffer, or (the bug) into a fresh one.
  auto plan_one = [&](DeviceBuffer& persistent, bool mla) -> const int32_t* {
    int32_t* plan = persistent.as<int32_t>();
    if (fresh) {
      keep.emplace_back(dev_, plan_bytes_);
      plan = keep.back().as<int32_t>();
    }
    if (p.decode_seq_lens.empty()) return plan;  // no decode rows: nothing reads a plan
    DecodePlanArgs a = decode_shape(mla);
    a.seq_lens_host = p.decode_seq_lens.data();
    a.num_rows = static_cast<int32_t>(p.decode_seq_lens.size());
    a.plan = plan;
    a.plan_bytes = plan_bytes_;
    dev_.paged_decode_plan(a);
    return plan;
  };
  DecodePlans plans;
  if (attention_plan_.as()) plans.attention = plan_one(attention_plan_, false);
  if (mla_plan_.as()) plans.mla = plan_one(mla_plan_, true);
  return plans;
}

DecodePlanArgs ModelRunner::decode_shape(bool mla, int32_t v_dim) const {
  const ModelSpec& m = s_.model;
  return {.num_rows = max_rows_,
          .block_size = limits_.block_size,
          .cache_dtype = s_.cache.dtype,
          .max_splits = limits_.max_decode_splits,
          .num_q_heads = m.num_q_heads,
          .num_kv_heads = mla ? 1 : m.num_kv_heads,
          .head_dim = mla ? latent_dim_ : m.head_dim,
          .v_dim = v_dim > 0 ? v_dim : mla ? m.kv_lora_rank : m.head_dim,
          .latent = mla,
          .interleaved = !mla && s_.cache.layout == KvLayout::kv_interleaved,
          .max_blocks_per_seq = limits_.block_table_stride,
          .uniform_splits = s_.engine.decode_splits == DecodeSplits::uniform};
}

int32_t ModelRunner::q_width(const LayerBuffers& L) const {
  return L.kind == LayerKind::mla ? s_.model.num_q_heads * latent_dim_ : q_dim_;
}

float* ModelRunner::mixer_out(LayerBuffers& L) {
  return L.kind == LayerKind::mla ? latent_out_.as<float>() : L.attn_out.as<float>();
}

size_t ModelRunner::mixer_width(const LayerBuffers& L) const {
  return L.kind == LayerKind::mla
             ? static_cast<size_t>(s_.model.num_q_heads) * s_.model.kv_lora_rank
             : static_cast<size_t>(q_dim_);
}

void ModelRunner::poison_outputs(const StepPlan& p) {
  const size_t rows = static_cast<size_t>(p.padded_rows);
  const size_t H = static_cast<size_t>(s_.model.num_q_heads);
  const FaultSpec& f = s_.faults;
  if (f.unwritten_outputs != PoisonPattern::none) {
    const FillPattern pat = to_fill(f.unwritten_outputs);
    for (auto& L : layers_) dev_.fill(L.attn_out.as(), rows * q_dim_ * sizeof(float), pat, 1);
    for (DeviceBuffer* b : {&ctx_out_, &new_out_, &latent_out_})
      dev_.fill(b->as(), std::min(b->bytes(), rows * H * head_out_max_ * sizeof(float)), pat, 2);
    for (DeviceBuffer* b : {&ctx_lse_, &new_lse_})
      dev_.fill(b->as(), rows * H * sizeof(float), pat, 3);
  }
  if (f.padded_rows != PoisonPattern::none && p.padded_rows > p.num_rows) {
    const FillPattern pat = to_fill(f.padded_rows);
    const size_t pad = static_cast<size_t>(p.padded_rows - p.num_rows);
    for (auto& L : layers_) {
      const size_t width = mixer_width(L);
      dev_.fill(mixer_out(L) + static_cast<size_t>(p.num_rows) * width, pad * width * sizeof(float),
                pat, 4);
    }
  }
}

// The seed-001 mitigation: zero the attention ops' output buffers before they run, so that rows
// no kernel writes (graph padding) hold zeros instead of stale bytes. Costs a memset per layer.
void ModelRunner::zero_init_outputs(int32_t rows) {
  for (auto& L : layers_) {
    if (L.kind == LayerKind::linear) continue;
    dev_.memset_async(mixer_out(L), static_cast<size_t>(rows) * mixer_width(L) * sizeof(float),
                      FillPattern::zero);
  }
}

void ModelRunner::forward(const StepPlan& p) {
  inputs_.upload(p);
  std::vector<DeviceBuffer> step_plan_buffer;
  const DecodePlans plans = plan_decode(p, step_plan_buffer);
  ensure_context_capacity(p.total_context_tokens());
  poison_outputs(p);
  if (s_.engine.zero_init_outputs) {
    // What the mitigation costs, timed on its own (the step below runs it again, in the graph).
    const auto t0 = std::chrono::steady_clock::now();
    zero_init_outputs(p.padded_rows);
    dev_.synchronize();
    timing_.zero_init_seconds += seconds_since(t0);
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (p.use_graph) {
    dev_.replay(graphs_.at(p.padded_rows));
  } else {
    launch(p, plans);
  }
  dev_.synchronize();
  timing_.forward_seconds += seconds_since(t0);
  ++timing_.steps;
}

void ModelRunner::launch(const StepPlan& p, const DecodePlans& plans) {
  const int32_t rows = p.padded_rows;
  dev_.embed({.tokens = inputs_.tokens.as<int32_t>(), .positions = inputs_.positions.as<int32_t>(),
              .table = embed_.as<float>(), .out = h_.as<float>(), .num_rows = rows,
              .hidden = hidden_, .vocab = s_.model.vocab_size});
  if (s_.engine.zero_init_outputs) zero_init_outputs(rows);
  for (size_t l = 0; l < layers_.size(); ++l) {
    LayerBuffers& L = layers_[l];
    dev_.begin_layer(static_cast<int32_t>(l), to_string(L.kind));
    dev_.rms_norm({.x = h_.as<float>(), .out = x_.as<float>(), .num_rows = rows, .cols = hidden_,
                   .eps = kRmsNormEps});
    switch (L.kind) {
      case LayerKind::attention: launch_attention(p, L, plans.attention); break;
      case LayerKind::mla: launch_mla(p, L, plans.mla); break;
      case LayerKind::linear: launch_linear(p, L); break;
    }
  }
  dev_.begin_layer(-1, nullptr);
  dev_.rms_norm({.x = h_.as<float>(), .out = x_.as<float>(), .num_rows = rows, .cols = hidden_,
                 .eps = kRmsNormEps});
  project(rows, lm_head_.as<float>(), nullptr, logits_.as<float>(), s_.model.vocab_size);
  dev_.argmax({.logits = logits_.as<float>(), .tokens = sampled_.as<int32_t>(), .num_rows = rows,
               .vocab = s_.model.vocab_size});
}

void ModelRunner::project(int32_t rows, const float* w, const float* bias, float* out,
                          int32_t out_dim) {
  dev_.linear({.x = x_.as<float>(), .x_row_stride = hidden_, .w = w, .bias = bias, .out = out,
               .out_row_stride = out_dim, .num_rows = rows, .in_dim = hidden_, .out_dim = out_dim});
}

void ModelRunner::launch_attention(const StepPlan& p, LayerBuffers& L, const int32_t* meta_dev) {
  const ModelSpec& m = s_.model;
  const int32_t rows = p.padded_rows, kv_dim = m.num_kv_heads * m.head_dim;
  float* q = layer_q(L);
  project(rows, L.wq.as<float>(), nullptr, q, q_dim_);
  project(rows, L.wk.as<float>(), nullptr, k_.as<float>(), kv_dim);
  project(rows, L.wv.as<float>(), L.bias.as<float>(), v_.as<float>(), kv_dim);
  dev_.write_kv({.cache = L.kv, .k = k_.as<float>(), .v = v_.as<float>(), .k_row_stride = kv_dim,
                 .v_row_stride = kv_dim, .slot_mapping = inputs_.slots.as<int64_t>(),
                 .num_tokens = rows});
  const MixerShape shape{q_dim_, kv_dim, m.num_kv_heads, m.head_dim, m.head_dim, softmax_scale_};
  paged_attention(p, L.kv, shape, meta_dev, q, k_.as<float>(), v_.as<float>(),
                  L.attn_out.as<float>());
  launch_quant_and_oproj(rows, L);
}

void ModelRunner::launch_mla(const StepPlan& p, LayerBuffers& L, const int32_t* meta_dev) {
  const ModelSpec& m = s_.model;
  const int32_t rows = p.padded_rows, H = m.num_q_heads, R = m.kv_lora_rank;
  const int32_t qw = H * latent_dim_;
  // Absorbed query: per head [Wuk_h^T q_nope | q_rope], so attention runs over the latent rows.
  float* q = layer_q(L);
  project(rows, L.wq.as<float>(), nullptr, q, qw);
  project(rows, L.wk.as<float>(), L.bias.as<float>(), k_.as<float>(), latent_dim_);
  // The latent is K; V is its first kv_lora_rank features.
  dev_.write_kv({.cache = L.kv, .k = k_.as<float>(), .k_row_stride = latent_dim_,
                 .slot_mapping = inputs_.slots.as<int64_t>(), .num_tokens = rows});
  const MixerShape shape{qw, latent_dim_, 1, latent_dim_, R, mla_softmax_scale_};
  paged_attention(p, L.kv, shape, meta_dev, q, k_.as<float>(), k_.as<float>(),
                  latent_out_.as<float>());
  // o_h = Wuv_h · latent output of head h: one grouped linear over the heads.
  dev_.linear({.x = latent_out_.as<float>(), .x_row_stride = int64_t{H} * R, .w = L.wuv.as<float>(),
               .out = L.attn_out.as<float>(), .out_row_stride = q_dim_, .num_rows = rows,
               .in_dim = R, .out_dim = m.head_dim, .groups = H, .x_group_stride = R});
  launch_quant_and_oproj(rows, L);
}

void ModelRunner::launch_linear(const StepPlan& p, LayerBuffers& L) {
  const ModelSpec& m = s_.model;
  const int32_t rows = p.padded_rows, H = m.num_q_heads;
  for (auto [w, out] : {std::pair{&L.wq, &q_}, std::pair{&L.wk, &k_}, std::pair{&L.wv, &v_}})
    project(rows, w->as<float>(), nullptr, out->as<float>(), q_dim_);
  project(rows, L.wg.as<float>(), L.bias.as<float>(), gate_.as<float>(), H);
  LinearAttnArgs a;
  a.state = L.state;
  a.state_block_stride = L.state_stride;
  a.q = q_.as<float>();
  a.k = k_.as<float>();
  a.v = v_.as<float>();
  a.qkv_row_stride = q_dim_;
  a.gate = gate_.as<float>();
  a.gate_row_stride = H;
  a.out = L.attn_out.as<float>();
  a.out_row_stride = q_dim_;
  a.seq_starts = inputs_.linear_starts.as<int32_t>();
  a.state_blocks = inputs_.linear_blocks.as<int32_t>();
  a.has_initial_state = inputs_.linear_has_state.as<int32_t>();
  a.num_seqs = p.linear_seqs();
  a.num_rows = p.linear_seq_starts.back();
  a.state_blocks_total = s_.cache.num_blocks;
  a.num_heads = H;
  a.head_dim = m.head_dim;
  a.scale = softmax_scale_;
  dev_.linear_attention(a);
  // No batch-wide op after a linear layer: its output goes straight into o_proj.
  dev_.linear({.x = L.attn_out.as<float>(), .x_row_stride = q_dim_, .w = L.wo.as<float>(),
               .out = h_.as<float>(), .out_row_stride = hidden_, .num_rows = rows, .in_dim = q_dim_,
               .out_dim = hidden_, .accumulate = true});
}

void ModelRunner::launch_quant_and_oproj(int32_t rows, LayerBuffers& L) {
  QuantFp8Args qa;
  qa.x = L.attn_out.as<float>();
  qa.y = L.quant.as<float>();
  qa.row_stride = q_dim_;
  qa.cols = q_dim_;
  qa.num_rows = rows;
  if (s_.regressions.has(Regression::padded_rows_in_reduction)) {
    qa.amax_rows_fixed = rows;  // the bug: every row of the (padded) batch
  } else {
    qa.amax_rows = inputs_.num_real_rows.as<int32_t>();  // the fix: the real rows only
  }
  dev_.quant_fp8(qa);
  dev_.linear({.x = L.quant.as<float>(), .x_row_stride = q_dim_, .w = L.wo.as<float>(),
               .out = h_.as<float>(), .out_row_stride = hidden_, .num_rows = rows, .in_dim = q_dim_,
               .out_dim = hidden_, .accumulate = true});
}

void ModelRunner::paged_attention(const StepPlan& p, const PagedKv& kv, const MixerShape& m,
                                  const int32_t* meta_dev, const float* q, const float* k_new,
                                  const float* v_new, float* out) {
  const int32_t H = s_.model.num_q_heads;
  const int64_t out_stride = int64_t{H} * m.v_dim;
  const int32_t nd = p.decode_rows();
  if (nd > 0) {
    PagedDecodeArgs a;
    a.cache = kv;
    a.q = q;
    a.q_row_stride = m.q_width;
    a.out = out;
    a.out_row_stride = out_stride;
    a.block_table = inputs_.decode_table.as<int32_t>();
    a.block_table_stride = limits_.block_table_stride;
    a.seq_lens = inputs_.decode_seq_lens.as<int32_t>();
    a.split_meta = meta_dev;
    a.partial_out = decode_workspace_.as<float>();
    a.partial_lse = decode_workspace_.as<float>() + partial_lse_offset_;
    a.max_splits = limits_.max_decode_splits;
    a.num_rows = nd;
    a.num_q_heads = H;
    a.v_dim = m.v_dim;
    a.scale = m.scale;
    dev_.paged_decode(a);
  }
  const int32_t np = p.prefill_rows();
  if (np <= 0) return;
  if (dev_.has_paged_prefill()) {  // a backend's fused op: the new tokens are in the cache already
    PagedPrefillArgs a;
    a.cache = kv;
    a.q = q + static_cast<size_t>(p.num_decode) * m.q_width;
    a.q_row_stride = m.q_width;
    a.out = out + static_cast<size_t>(p.num_decode) * out_stride;
    a.out_row_stride = out_stride;
    a.q_starts = inputs_.prefill_q_starts.as<int32_t>();
    a.ctx_lens = inputs_.prefill_ctx_lens.as<int32_t>();
    a.block_table = inputs_.prefill_table.as<int32_t>();
    a.block_table_stride = limits_.block_table_stride;
    a.num_seqs = p.num_prefill_seqs;
    a.num_rows = np;
    a.num_q_heads = H;
    a.v_dim = m.v_dim;
    a.scale = m.scale;
    a.max_q_len = p.max_prefill_len(p.num_prefill_seqs);
    a.max_ctx_len = p.max_context_len();
    a.q_starts_host = p.prefill_q_starts.data();
    a.ctx_lens_host = p.prefill_ctx_lens.data();
    dev_.paged_prefill(a);
    return;
  }
  const bool k_only = kv.v == kv.k;  // mla: V is the latent K
  auto varlen = [&](const float* k, const float* v, bool causal) {
    VarlenAttnArgs a;
    a.q = q + static_cast<size_t>(p.num_decode) * m.q_width;
    a.q_row_stride = m.q_width;
    a.k = k;
    a.v = v;
    a.kv_row_stride = m.kv_width;
    a.q_starts = inputs_.prefill_q_starts.as<int32_t>();  // rows relative to the first prefill row
    a.out_row_stride = out_stride;
    a.num_q_heads = H;
    a.num_kv_heads = m.num_kv_heads;
    a.head_dim = m.head_dim;
    a.v_dim = m.v_dim;
    a.scale = m.scale;
    a.causal = causal;
    return a;
  };
  if (p.num_context_seqs > 0) {
    GatherKvArgs g;
    // The seed-004 bug: the gather's descriptor computed from the shape, not the cache's strides.
    const bool shape_strides = s_.regressions.has(Regression::gather_assumes_contiguous);
    g.cache = shape_strides ? with_shape_strides(kv) : kv;
    g.block_table = inputs_.prefill_table.as<int32_t>();  // context sequences come first
    g.block_table_stride = limits_.block_table_stride;
    g.ctx_lens = inputs_.prefill_ctx_lens.as<int32_t>();
    g.ctx_starts = inputs_.context_starts.as<int32_t>();
    g.k_out = ctx_k_.as<float>();
    g.v_out = k_only ? nullptr : ctx_v_.as<float>();
    g.num_seqs = p.num_context_seqs;
    g.total_ctx = p.total_context_tokens();
    dev_.gather_kv(g);

    VarlenAttnArgs c = varlen(ctx_k_.as<float>(), k_only ? ctx_k_.as<float>() : ctx_v_.as<float>(),
                              false);
    c.k_starts = inputs_.context_starts.as<int32_t>();
    c.out = ctx_out_.as<float>();
    c.lse = ctx_lse_.as<float>();
    c.num_seqs = p.num_context_seqs;
    c.num_rows = p.prefill_tokens_with_context;
    c.num_keys = p.total_context_tokens();
    c.max_q_len = p.max_prefill_len(p.num_context_seqs);  // context sequences come first
    c.max_k_len = p.max_context_len();
    c.q_starts_host = p.prefill_q_starts.data();
    c.k_starts_host = p.context_starts.data();
    dev_.varlen_attention(c);
  }
  const size_t kv_off = static_cast<size_t>(p.num_decode) * m.kv_width;
  VarlenAttnArgs n = varlen(k_new + kv_off, v_new + kv_off, true);
  n.k_starts = inputs_.prefill_q_starts.as<int32_t>();
  n.out = new_out_.as<float>();
  n.lse = new_lse_.as<float>();
  n.num_seqs = p.num_prefill_seqs;
  n.num_rows = n.num_keys = np;
  n.max_q_len = n.max_k_len = p.max_prefill_len(p.num_prefill_seqs);
  n.q_starts_host = n.k_starts_host = p.prefill_q_starts.data();
  // The new tokens' K/V come from the projections: attend to them as the cache stores them.
  n.kv_dtype = kv.dtype;
  n.k_scale = kv.k_scale;
  n.v_scale = kv.v_scale;
  dev_.varlen_attention(n);

  MergeStatesArgs mg;
  mg.out_a = ctx_out_.as<float>();
  mg.lse_a = ctx_lse_.as<float>();
  mg.out_b = new_out_.as<float>();
  mg.lse_b = new_lse_.as<float>();
  mg.out = out + static_cast<size_t>(p.num_decode) * out_stride;
  mg.row_stride = out_stride;
  mg.num_rows = np;
  // The fix of seed 002: merge only the tokens that have context; the bug merges all of them.
  mg.num_merge = s_.regressions.has(Regression::merge_ignores_context_count)
                     ? np
                     : p.prefill_tokens_with_context;
  mg.num_heads = H;
  mg.head_dim = m.v_dim;
  dev_.merge_states(mg);
}

StepOutputs ModelRunner::read_outputs(const StepPlan& p) const {
  StepOutputs o;
  const size_t n = static_cast<size_t>(p.num_rows) * q_dim_;
  for (const auto& L : layers_) {
    o.attn_out.emplace_back(n);
    dev_.download(o.attn_out.back().data(), L.attn_out.as(), n * sizeof(float));
    o.quant_out.emplace_back();
    if (L.kind == LayerKind::linear) continue;
    o.quant_out.back().resize(n);
    dev_.download(o.quant_out.back().data(), L.quant.as(), n * sizeof(float));
  }
  for (const auto& L : layers_) {
    o.q.emplace_back();
    if (!L.q.bytes()) continue;
    o.q.back().resize(static_cast<size_t>(p.num_rows) * q_width(L));
    dev_.download(o.q.back().data(), L.q.as(), o.q.back().size() * sizeof(float));
  }
  o.sampled.resize(p.num_rows);
  dev_.download(o.sampled.data(), sampled_.as(), p.num_rows * sizeof(int32_t));
  return o;
}

KvRows ModelRunner::read_kv_rows(size_t layer, const int32_t* block_table, int32_t from,
                                 int32_t to) const {
  const PagedKv& kv = layers_.at(layer).kv;
  const bool latent = kv.v == kv.k;  // mla: V is K's first features
  const int64_t width = int64_t{kv.num_kv_heads} * kv.head_dim;
  const size_t esize = dtype_size(kv.dtype);
  // One block's elements as the strides spread them, from its first.
  auto extent = [&](int64_t token, int64_t head) {
    return (kv.block_size - 1) * token + (kv.num_kv_heads - 1) * head + kv.head_dim;
  };
  std::vector<char> kbuf(extent(kv.k_stride_token, kv.k_stride_head) * esize),
      vbuf(latent ? 0 : extent(kv.v_stride_token, kv.v_stride_head) * esize);
  PagedKv host = kv;  // the same strides over the downloaded block, as block 0
  host.k = kbuf.data();
  host.v = latent ? host.k : vbuf.data();
  KvRows out{.from = from, .to = to, .k = {}, .v = {}};
  out.k.resize(static_cast<size_t>((to - from) * width));
  if (!latent) out.v.resize(out.k.size());
  int32_t loaded = -1;
  for (int32_t pos = from; pos < to; ++pos) {
    const int32_t block = block_table[pos / kv.block_size], entry = pos % kv.block_size;
    if (block != loaded) {
      dev_.download(kbuf.data(), static_cast<const char*>(kv.k) + block * kv.k_stride_block * esize,
                    kbuf.size());
      if (!latent)
        dev_.download(vbuf.data(),
                      static_cast<const char*>(kv.v) + block * kv.v_stride_block * esize,
                      vbuf.size());
      loaded = block;
    }
    float* k = &out.k[static_cast<size_t>((pos - from) * width)];
    for (int32_t h = 0; h < kv.num_kv_heads; ++h)
      for (int32_t f = 0; f < kv.head_dim; ++f) {
        k[h * kv.head_dim + f] = load_k(host, 0, entry, h, f);
        if (!latent) out.v[(pos - from) * width + h * kv.head_dim + f] = load_v(host, 0, entry, h, f);
      }
  }
  return out;
}

void ModelRunner::fill_blocks(const std::vector<int32_t>& ids, FillPattern pattern,
                              const std::vector<LayerKind>& kinds, uint64_t seed) {
  if (ids.empty()) return;
  DeviceBuffer ids_dev = upload_new(dev_, ids);
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (std::find(kinds.begin(), kinds.end(), layers_[l].kind) == kinds.end()) continue;
    FillBlocksArgs a;
    a.cache = layers_[l].fill_view;
    a.block_ids = ids_dev.as<int32_t>();
    a.num_ids = static_cast<int32_t>(ids.size());
    a.pattern = pattern;
    a.seed = seed + l;
    dev_.begin_layer(static_cast<int32_t>(l), to_string(layers_[l].kind));
    dev_.fill_blocks(a);
  }
  dev_.begin_layer(-1, nullptr);
  dev_.synchronize();
}

}  // namespace kv
