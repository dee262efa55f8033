#include "engine/model_runner.h"

#include <algorithm>

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
                         const RegressionSet& reg, const PlanLimits& limits)
    : s_(s), dev_(dev), reg_(reg), limits_(limits) {
  const ModelSpec& m = s.model;
  q_dim_ = m.num_q_heads * m.head_dim;
  kv_dim_ = m.num_kv_heads * m.head_dim;
  hidden_ = m.hidden_size;
  softmax_scale_ = w.softmax_scale;
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
    layers_[l].wq = upload_new(dev_, w.layers[l].wq);
    layers_[l].wk = upload_new(dev_, w.layers[l].wk);
    layers_[l].wv = upload_new(dev_, w.layers[l].wv);
    layers_[l].bv = upload_new(dev_, w.layers[l].bv);
    layers_[l].wo = upload_new(dev_, w.layers[l].wo);
  }
}

void ModelRunner::allocate_buffers() {
  const ModelSpec& m = s_.model;
  const CacheSpec& c = s_.cache;
  const size_t R = static_cast<size_t>(max_rows_);
  const size_t stride = static_cast<size_t>(limits_.block_table_stride);
  const size_t splits = static_cast<size_t>(limits_.max_decode_splits);
  for (auto& L : layers_) {
    L.cache = DeviceBuffer(dev_, static_cast<size_t>(layer_cache_bytes(
                                     c.num_blocks, c.block_size, m.num_kv_heads, m.head_dim, c.dtype)));
    L.kv = make_paged_kv(L.cache.as(), c.layout, c.dtype, c.num_blocks, c.block_size,
                         m.num_kv_heads, m.head_dim);
    L.attn_out = buffer_of<float>(dev_, R * q_dim_);
    L.quant = buffer_of<float>(dev_, R * q_dim_);
  }
  tokens_ = buffer_of<int32_t>(dev_, R);
  positions_ = buffer_of<int32_t>(dev_, R);
  slots_ = buffer_of<int64_t>(dev_, R);
  num_real_rows_ = buffer_of<int32_t>(dev_, 1);
  decode_table_ = buffer_of<int32_t>(dev_, R * stride);
  decode_seq_lens_ = buffer_of<int32_t>(dev_, R);
  decode_meta_ = buffer_of<int32_t>(dev_, kDecodeMetaHeader + R);
  prefill_q_starts_ = buffer_of<int32_t>(dev_, R + 1);
  context_table_ = buffer_of<int32_t>(dev_, R * stride);
  context_lens_ = buffer_of<int32_t>(dev_, R);
  context_starts_ = buffer_of<int32_t>(dev_, R + 1);
  h_ = buffer_of<float>(dev_, R * hidden_);
  x_ = buffer_of<float>(dev_, R * hidden_);
  q_ = buffer_of<float>(dev_, R * q_dim_);
  k_ = buffer_of<float>(dev_, R * kv_dim_);
  v_ = buffer_of<float>(dev_, R * kv_dim_);
  ctx_out_ = buffer_of<float>(dev_, R * q_dim_);
  ctx_lse_ = buffer_of<float>(dev_, R * m.num_q_heads);
  new_out_ = buffer_of<float>(dev_, R * q_dim_);
  new_lse_ = buffer_of<float>(dev_, R * m.num_q_heads);
  partial_out_ = buffer_of<float>(dev_, R * splits * q_dim_);
  partial_lse_ = buffer_of<float>(dev_, R * splits * m.num_q_heads);
  logits_ = buffer_of<float>(dev_, R * m.vocab_size);
  sampled_ = buffer_of<int32_t>(dev_, R);
}

void ModelRunner::capture_graphs() {
  for (int32_t size : limits_.capture_sizes) {
    const StepPlan p = build_capture_plan(size, limits_);
    const int32_t* meta = decode_meta_.as<int32_t>();
    upload_inputs(p, meta);
    dev_.begin_capture();
    if (reg_.graph_metadata_not_persistent) {
      // The bug: the metadata builder hands the kernel a fresh buffer; the graph keeps its address.
      graph_metadata_.push_back(upload_new(dev_, p.decode_meta));
      meta = graph_metadata_.back().as<int32_t>();
    }
    launch(p, meta);
    graphs_[size] = dev_.end_capture();
  }
}

void ModelRunner::ensure_context_capacity(int32_t tokens) {
  if (tokens <= ctx_capacity_) return;
  ctx_capacity_ = std::max(tokens, 2 * ctx_capacity_);
  ctx_k_ = buffer_of<float>(dev_, static_cast<size_t>(ctx_capacity_) * kv_dim_);
  ctx_v_ = buffer_of<float>(dev_, static_cast<size_t>(ctx_capacity_) * kv_dim_);
}

void ModelRunner::upload_inputs(const StepPlan& p, const int32_t* meta_dev) {
  tokens_.upload(p.tokens);
  positions_.upload(p.positions);
  slots_.upload(p.slot_mapping);
  num_real_rows_.upload(std::vector<int32_t>{p.num_rows});
  decode_table_.upload(p.decode_block_table);
  decode_seq_lens_.upload(p.decode_seq_lens);
  if (meta_dev == decode_meta_.as<int32_t>()) decode_meta_.upload(p.decode_meta);
  prefill_q_starts_.upload(p.prefill_q_starts);
  context_table_.upload(p.context_block_table);
  context_lens_.upload(p.context_lens);
  context_starts_.upload(p.context_starts);
}

void ModelRunner::poison_outputs(const StepPlan& p) {
  const size_t rows = static_cast<size_t>(p.padded_rows);
  const FaultSpec& f = s_.faults;
  if (f.unwritten_outputs != PoisonPattern::none) {
    const FillPattern pat = to_fill(f.unwritten_outputs);
    for (auto& L : layers_) dev_.fill(L.attn_out.as(), rows * q_dim_ * sizeof(float), pat, 1);
    for (DeviceBuffer* b : {&ctx_out_, &new_out_})
      dev_.fill(b->as(), rows * q_dim_ * sizeof(float), pat, 2);
    for (DeviceBuffer* b : {&ctx_lse_, &new_lse_})
      dev_.fill(b->as(), rows * s_.model.num_q_heads * sizeof(float), pat, 3);
  }
  if (f.padded_rows != PoisonPattern::none && p.padded_rows > p.num_rows) {
    const FillPattern pat = to_fill(f.padded_rows);
    const size_t pad = static_cast<size_t>(p.padded_rows - p.num_rows);
    for (auto& L : layers_)
      dev_.fill(L.attn_out.as<float>() + static_cast<size_t>(p.num_rows) * q_dim_,
                pad * q_dim_ * sizeof(float), pat, 4);
  }
}

void ModelRunner::forward(const StepPlan& p) {
  DeviceBuffer fresh_meta;
  const int32_t* meta = decode_meta_.as<int32_t>();
  if (reg_.graph_metadata_not_persistent) {
    fresh_meta = upload_new(dev_, p.decode_meta);  // a replay never sees this buffer
    meta = fresh_meta.as<int32_t>();
  }
  upload_inputs(p, meta);
  ensure_context_capacity(p.total_context_tokens());
  poison_outputs(p);
  if (p.use_graph) {
    dev_.replay(graphs_.at(p.padded_rows));
  } else {
    launch(p, meta);
  }
  dev_.synchronize();
}

void ModelRunner::launch(const StepPlan& p, const int32_t* meta_dev) {
  const int32_t rows = p.padded_rows;
  dev_.embed({tokens_.as<int32_t>(), positions_.as<int32_t>(), embed_.as<float>(), h_.as<float>(),
              rows, hidden_, s_.model.vocab_size});
  for (auto& L : layers_) {
    dev_.rms_norm({h_.as<float>(), x_.as<float>(), rows, hidden_, kRmsNormEps});
    dev_.linear({x_.as<float>(), hidden_, L.wq.as<float>(), nullptr, q_.as<float>(), q_dim_, rows,
                 hidden_, q_dim_, false});
    dev_.linear({x_.as<float>(), hidden_, L.wk.as<float>(), nullptr, k_.as<float>(), kv_dim_, rows,
                 hidden_, kv_dim_, false});
    dev_.linear({x_.as<float>(), hidden_, L.wv.as<float>(), L.bv.as<float>(), v_.as<float>(),
                 kv_dim_, rows, hidden_, kv_dim_, false});
    WriteKvArgs w;
    w.cache = L.kv;
    w.k = k_.as<float>();
    w.v = v_.as<float>();
    w.k_row_stride = w.v_row_stride = kv_dim_;
    w.slot_mapping = slots_.as<int64_t>();
    w.num_tokens = rows;
    dev_.write_kv(w);
    if (s_.engine.zero_init_outputs)  // the seed-001 mitigation; costs a memset per step
      dev_.memset_async(L.attn_out.as(), static_cast<size_t>(rows) * q_dim_ * sizeof(float),
                        FillPattern::zero);
    launch_attention(p, L, meta_dev);

    QuantFp8Args qa;
    qa.x = L.attn_out.as<float>();
    qa.y = L.quant.as<float>();
    qa.row_stride = q_dim_;
    qa.cols = q_dim_;
    qa.num_rows = rows;
    if (reg_.padded_rows_in_reduction) {
      qa.amax_rows_fixed = rows;  // the bug: every row of the (padded) batch
    } else {
      qa.amax_rows = num_real_rows_.as<int32_t>();  // the fix: the real rows only
    }
    dev_.quant_fp8(qa);
    dev_.linear({L.quant.as<float>(), q_dim_, L.wo.as<float>(), nullptr, h_.as<float>(), hidden_,
                 rows, q_dim_, hidden_, true});
  }
  dev_.rms_norm({h_.as<float>(), x_.as<float>(), rows, hidden_, kRmsNormEps});
  dev_.linear({x_.as<float>(), hidden_, lm_head_.as<float>(), nullptr, logits_.as<float>(),
               s_.model.vocab_size, rows, hidden_, s_.model.vocab_size, false});
  dev_.argmax({logits_.as<float>(), sampled_.as<int32_t>(), rows, s_.model.vocab_size});
}

void ModelRunner::launch_attention(const StepPlan& p, LayerBuffers& L, const int32_t* meta_dev) {
  const ModelSpec& m = s_.model;
  const int32_t nd = p.decode_rows();
  if (nd > 0) {
    PagedDecodeArgs a;
    a.cache = L.kv;
    a.q = q_.as<float>();
    a.q_row_stride = q_dim_;
    a.out = L.attn_out.as<float>();
    a.out_row_stride = q_dim_;
    a.block_table = decode_table_.as<int32_t>();
    a.block_table_stride = limits_.block_table_stride;
    a.seq_lens = decode_seq_lens_.as<int32_t>();
    a.split_meta = meta_dev;
    a.partial_out = partial_out_.as<float>();
    a.partial_lse = partial_lse_.as<float>();
    a.max_splits = limits_.max_decode_splits;
    a.num_rows = nd;
    a.num_q_heads = m.num_q_heads;
    a.scale = softmax_scale_;
    dev_.paged_decode(a);
  }
  const int32_t np = p.prefill_rows();
  if (np <= 0) return;
  const size_t q_off = static_cast<size_t>(p.num_decode) * q_dim_;
  const size_t kv_off = static_cast<size_t>(p.num_decode) * kv_dim_;
  if (p.num_context_seqs > 0) {
    GatherKvArgs g;
    g.cache = L.kv;
    g.block_table = context_table_.as<int32_t>();
    g.block_table_stride = limits_.block_table_stride;
    g.ctx_lens = context_lens_.as<int32_t>();
    g.ctx_starts = context_starts_.as<int32_t>();
    g.k_out = ctx_k_.as<float>();
    g.v_out = ctx_v_.as<float>();
    g.num_seqs = p.num_context_seqs;
    g.assume_contiguous = reg_.gather_assumes_contiguous;
    dev_.gather_kv(g);

    VarlenAttnArgs c = varlen_args(q_off, ctx_k_.as<float>(), ctx_v_.as<float>(), false);
    c.k_starts = context_starts_.as<int32_t>();
    c.out = ctx_out_.as<float>();
    c.lse = ctx_lse_.as<float>();
    c.num_seqs = p.num_context_seqs;
    dev_.varlen_attention(c);
  }
  VarlenAttnArgs n = varlen_args(q_off, k_.as<float>() + kv_off, v_.as<float>() + kv_off, true);
  n.k_starts = prefill_q_starts_.as<int32_t>();
  n.out = new_out_.as<float>();
  n.lse = new_lse_.as<float>();
  n.num_seqs = p.num_prefill_seqs;
  dev_.varlen_attention(n);

  MergeStatesArgs mg;
  mg.out_a = ctx_out_.as<float>();
  mg.lse_a = ctx_lse_.as<float>();
  mg.out_b = new_out_.as<float>();
  mg.lse_b = new_lse_.as<float>();
  mg.out = L.attn_out.as<float>() + q_off;
  mg.row_stride = q_dim_;
  mg.num_rows = np;
  // The fix of seed 002: merge only the tokens that have context; the bug merges all of them.
  mg.num_merge = reg_.merge_ignores_context_count ? np : p.prefill_tokens_with_context;
  mg.num_heads = m.num_q_heads;
  mg.head_dim = m.head_dim;
  dev_.merge_states(mg);
}

VarlenAttnArgs ModelRunner::varlen_args(size_t q_off, const float* k, const float* v,
                                        bool causal) const {
  VarlenAttnArgs a;
  a.q = q_.as<float>() + q_off;
  a.q_row_stride = q_dim_;
  a.k = k;
  a.v = v;
  a.kv_row_stride = kv_dim_;
  a.q_starts = prefill_q_starts_.as<int32_t>();  // rows relative to the first prefill row
  a.out_row_stride = q_dim_;
  a.num_q_heads = s_.model.num_q_heads;
  a.num_kv_heads = s_.model.num_kv_heads;
  a.head_dim = s_.model.head_dim;
  a.scale = softmax_scale_;
  a.causal = causal;
  return a;
}

StepOutputs ModelRunner::read_outputs(const StepPlan& p) const {
  StepOutputs o;
  const size_t n = static_cast<size_t>(p.num_rows) * q_dim_;
  for (const auto& L : layers_) {
    o.attn_out.emplace_back(n);
    dev_.download(o.attn_out.back().data(), L.attn_out.as(), n * sizeof(float));
    o.quant_out.emplace_back(n);
    dev_.download(o.quant_out.back().data(), L.quant.as(), n * sizeof(float));
  }
  o.sampled.resize(p.num_rows);
  dev_.download(o.sampled.data(), sampled_.as(), p.num_rows * sizeof(int32_t));
  return o;
}

void ModelRunner::fill_blocks(const std::vector<int32_t>& ids, FillPattern pattern,
                              const std::vector<LayerKind>& kinds, uint64_t seed) {
  if (ids.empty()) return;
  DeviceBuffer ids_dev = upload_new(dev_, ids);
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (std::find(kinds.begin(), kinds.end(), s_.model.layers[l]) == kinds.end()) continue;
    FillBlocksArgs a;
    a.cache = layers_[l].kv;
    a.block_ids = ids_dev.as<int32_t>();
    a.num_ids = static_cast<int32_t>(ids.size());
    a.pattern = pattern;
    a.seed = seed + l;
    dev_.fill_blocks(a);
  }
  dev_.synchronize();
}

}  // namespace kv
