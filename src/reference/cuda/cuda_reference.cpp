// cuda_reference.cpp — the float64 reference on the GPU: construction (the parts of a slot the
// hash covers, the batch scratch), the model's weights on the device, epochs, and the factory
// (cuda_reference_impl.h lists the other files, one per concern).
#include "reference/cuda/cuda_reference_impl.h"

#include <cstring>

#include "reference/host/ref_math.h"

namespace kv::refgpu_impl {

CudaReference::CudaReference(const Scenario& s, const ModelWeights& w, int64_t keep_bytes)
    : s_(s),
      w_(w),
      m_(w.spec),
      q_dim_(int64_t{w.spec.num_q_heads} * w.spec.head_dim),
      hidden_(w.spec.hidden_size),
      L_(static_cast<int64_t>(w.spec.layers.size())),
      kvw_(0),
      layout_(ref_slot_layout(w.spec, s.workload.prompt_len.max + s.workload.new_tokens.max)),
      linear_(std::find(w.spec.layers.begin(), w.spec.layers.end(), LayerKind::linear) !=
              w.spec.layers.end()),
      keep_slots_(std::max<int64_t>(keep_bytes, 0) / std::max<int64_t>(layout_.bytes, 1)),
      batch_rows_(ref_batch_rows(w.spec)) {
  KV_CUDA_CHECK("reference device", cudaGetDevice(&device_));
  make_parts();
  KV_CUDA_CHECK("reference stream", cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  upload_weights();
  reserve_scratch();
  note_held();
}

void CudaReference::make_parts() {
  const int64_t H = m_.num_q_heads, D = m_.head_dim;
  for (size_t l = 0; l < m_.layers.size(); ++l) {
    const RefLayerOffsets& o = layout_.layers[l];
    const int32_t li = static_cast<int32_t>(l);
    switch (m_.layers[l]) {
      case LayerKind::attention: {
        const int64_t row = int64_t{m_.num_kv_heads} * D * 4;
        parts_.push_back({"K", li, o.a, row, 0});
        parts_.push_back({"V", li, o.b, row, 0});
        kvw_ = std::max<int64_t>(kvw_, int64_t{m_.num_kv_heads} * D);
        break;
      }
      case LayerKind::mla:
        parts_.push_back({"latent", li, o.a, int64_t{m_.kv_lora_rank + m_.qk_rope_dim} * 4, 0});
        parts_.push_back({"expanded keys", li, o.b, q_dim_ * 8, 0});
        parts_.push_back({"expanded values", li, o.c, q_dim_ * 8, 0});
        kvw_ = std::max<int64_t>(kvw_, m_.kv_lora_rank + m_.qk_rope_dim);
        break;
      case LayerKind::linear:
        parts_.push_back({"recurrent state", li, o.a, 0, H * D * D * 8});
        kvw_ = std::max<int64_t>(kvw_, q_dim_);
        break;
    }
  }
  parts_.push_back({"attention outputs", -1, layout_.out, L_ * q_dim_ * 8, 0, false});
  parts_.push_back({"final hidden states", -1, layout_.hidden, hidden_ * 8, 0, false});
  parts_.push_back({"fp8 tie record", -1, layout_.ties, L_ * 8, 0, false});
}

void CudaReference::reserve_scratch() {
  const size_t N = static_cast<size_t>(batch_rows_);
  const int64_t H = m_.num_q_heads, P = m_.qk_rope_dim;
  const bool mla = std::find(m_.layers.begin(), m_.layers.end(), LayerKind::mla) != m_.layers.end();
  h_.reserve(N * hidden_ * 8, "hidden states", held_);
  x_.reserve(N * hidden_ * 8, "normed states", held_);
  q_.reserve(N * q_dim_ * 8, "queries", held_);
  q_rope_.reserve(mla ? N * H * P * 8 : 8, "rope queries", held_);
  k_.reserve(N * kvw_ * 8, "keys", held_);
  v_.reserve(N * kvw_ * 8, "values", held_);
  gate_.reserve(N * H * 8, "gates", held_);
  o_.reserve(N * q_dim_ * 8, "outputs", held_);
  o_in_.reserve(N * q_dim_ * 8, "quantised outputs", held_);
  hints_.reserve(N * L_ * q_dim_ * 4, "the engine's fp8 rows", held_);
  ties_.reserve(N * L_ * 8, "fp8 tie records", held_);
  kept_ties_.reserve(N * L_ * 8, "fp8 tie records", held_);
  ties_host_.reserve(2 * N * L_ * 8);
  partials_.reserve(static_cast<size_t>(kRefSplitScratchBytes), "split attention states", held_);
  rows_.reserve(N * sizeof(Row), "rows", held_);
  segs_.reserve(N * sizeof(Segment), "segments", held_);
  for (int k = 0; k < 2; ++k) {
    groups_[k].reserve(N * sizeof(refgpu::QueryGroup), "query groups", held_);
    groups_host_[k].reserve(N * sizeof(refgpu::QueryGroup));
  }
  rows_host_.reserve(N * sizeof(Row));
  segs_host_.reserve(N * sizeof(Segment));
  hints_host_.reserve(N * L_ * q_dim_ * 4);
}

void CudaReference::upload_weights() {
  // One allocation: the weights the reference reads, 256-byte aligned, hashed as one range.
  std::vector<std::pair<const std::vector<float>*, const float**>> todo;
  layers_.resize(m_.layers.size());
  todo.push_back({&w_.embed, &embed_});
  todo.push_back({&w_.lm_head, &lm_head_});
  for (size_t l = 0; l < m_.layers.size(); ++l) {
    const LayerWeights& lw = w_.layers[l];
    LayerDev& d = layers_[l];
    d.kind = lw.kind;
    for (auto [v, p] : {std::pair{&lw.wq, &d.wq}, {&lw.wk, &d.wk}, {&lw.wv, &d.wv},
                        {&lw.bv, &d.bv}, {&lw.wg, &d.wg}, {&lw.bg, &d.bg},
                        {&lw.wdkv, &d.wdkv}, {&lw.bdkv, &d.bdkv}, {&lw.wqn, &d.wqn},
                        {&lw.wqr, &d.wqr}, {&lw.wuk, &d.wuk}, {&lw.wuv, &d.wuv},
                        {&lw.wo, &d.wo}})
      if (!v->empty()) todo.push_back({v, p});
    d.quant_scale = lw.kind == LayerKind::linear ? 0.0f : w_.quant_scale(l, s_.cache);
  }
  size_t total = 0;
  for (auto& [v, p] : todo) total += (v->size() * 4 + 255) / 256 * 256;
  weights_.reserve(total, "the model's weights", held_);
  std::vector<char> host(total, 0);
  size_t at = 0;
  for (auto& [v, p] : todo) {
    std::memcpy(host.data() + at, v->data(), v->size() * 4);
    *p = reinterpret_cast<const float*>(weights_.as<char>() + at);
    at += (v->size() * 4 + 255) / 256 * 256;
  }
  upload(weights_.as<char>(), host.data(), total);
  weights_hash_ = hash({{weights_.as<uint32_t>(), 0, static_cast<int64_t>(total / 4)}})[0];
}
void CudaReference::begin_epoch() {
  for (auto& sl : slots_)
    if (sl->request >= 0) go_dormant(*sl);
  slot_of_.clear();
}
void CudaReference::release(int32_t request) {
  const auto it = slot_of_.find(request);
  if (it == slot_of_.end()) return;
  go_dormant(*slots_[static_cast<size_t>(it->second)]);
  slot_of_.erase(it);
}

}  // namespace kv::refgpu_impl

namespace kv {

using refgpu_impl::CudaReference;

void corrupt_history_for_test(StepReference& ref, int32_t request) {
  dynamic_cast<CudaReference&>(ref).corrupt_for_test(request, false);
}

void corrupt_state_snapshot_for_test(StepReference& ref, int32_t request) {
  dynamic_cast<CudaReference&>(ref).corrupt_for_test(request, true);
}

int64_t cuda_reference_free_bytes() {
  size_t free = 0, total = 0;
  KV_CUDA_CHECK("reference memory info", cudaMemGetInfo(&free, &total));
  return static_cast<int64_t>(free);
}

std::unique_ptr<StepReference> make_cuda_reference(const Scenario& s, const ModelWeights& w,
                                                   int64_t keep_bytes) {
  static_assert(kRmsNormEps == 1e-6f, "ref_kernels.cu's kRmsEps is model/model_weights.h's");
  return std::make_unique<CudaReference>(s, w, keep_bytes);
}

CudaReferenceWork cuda_reference_work(const StepReference& ref) {
  return dynamic_cast<const CudaReference&>(ref).work();
}

}  // namespace kv
