#include "check/op_checker.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "check/row_error.h"

namespace kv {
namespace {

size_t layer_width(const ModelSpec& m, LayerKind kind) {
  return kind == LayerKind::mla ? static_cast<size_t>(m.kv_lora_rank + m.qk_rope_dim)
                                : static_cast<size_t>(m.num_kv_heads) * m.head_dim;
}

}  // namespace

OpChecker::OpChecker(const Scenario& s, const ModelWeights& w, const OpRoundings& roundings,
                     double safety)
    : s_(s), w_(w), roundings_(roundings), safety_(safety) {}

void OpChecker::begin_epoch() { history_.clear(); }

void OpChecker::add(const CheckedStep& step) {
  for (const ChunkKv& c : step.kv) {
    std::vector<History>& layers = history_[step.plan.chunks[c.chunk].request_id];
    layers.resize(c.layers.size());
    for (size_t l = 0; l < c.layers.size(); ++l) {
      const KvRows& rows = c.layers[l];
      if (rows.k.empty()) continue;
      const size_t width = layer_width(s_.model, s_.model.layers[l]);
      History& h = layers[l];
      const size_t need = static_cast<size_t>(rows.to) * width;
      if (h.k.size() < need) h.k.resize(need);
      std::copy(rows.k.begin(), rows.k.end(), h.k.begin() + static_cast<size_t>(rows.from) * width);
      if (rows.v.empty()) continue;
      if (h.v.size() < need) h.v.resize(need);
      std::copy(rows.v.begin(), rows.v.end(), h.v.begin() + static_cast<size_t>(rows.from) * width);
    }
  }
}

std::vector<uint8_t> OpChecker::judged_chunks(const CheckedStep& step) const {
  std::vector<uint8_t> judged(step.plan.chunks.size(), 0);
  for (const ChunkKv& c : step.kv) judged[c.chunk] = c.unwritten_rows ? 0 : 1;
  return judged;
}

bool OpChecker::judges_layer(const CheckedStep& step, size_t layer) const {
  return layer < step.outputs.q.size() && !step.outputs.q[layer].empty();
}

void OpChecker::measure(const CheckedStep& step, size_t chunk, int32_t position, size_t layer,
                        OpRowError* heads, const double* reference, double floor) const {
  const ModelSpec& m = s_.model;
  const StepPlan& plan = step.plan;
  const ScheduledChunk& c = plan.chunks[chunk];
  const size_t row = static_cast<size_t>(plan.chunk_first_row[chunk] + position - c.start);
  const int32_t H = m.num_q_heads, D = m.head_dim;
  const bool mla = m.layers[layer] == LayerKind::mla;
  const size_t width = layer_width(m, m.layers[layer]);
  const int32_t q_width = mla ? H * static_cast<int32_t>(width) : H * D;
  const float* q = step.outputs.q[layer].data() + row * static_cast<size_t>(q_width);
  const float* got = step.outputs.attn_out[layer].data() + row * static_cast<size_t>(H) * D;
  const History& hist = history_.at(c.request_id).at(layer);
  const int32_t n = position + 1;  // causal: the keys up to and with its own
  if (hist.k.size() < static_cast<size_t>(n) * width)
    throw std::logic_error("op check: a position's K/V rows were not read");
  const int32_t group = H / m.num_kv_heads;
  const OpRounding& r = rounding(mixer_site(m.layers[layer], c.is_decode, c.start > 0));
  std::vector<double> want(static_cast<size_t>(D));
  for (int32_t h = 0; h < H; ++h) {
    OpHeadInputs in;
    in.stride = static_cast<int64_t>(width);
    in.n = n;
    double e = 0.0;
    if (mla) {
      in.q = q + static_cast<size_t>(h) * width;
      in.k = in.v = hist.k.data();
      in.dk = static_cast<int32_t>(width);
      in.dv = m.kv_lora_rank;
      in.scale = w_.mla_softmax_scale;
      const float* wuv = w_.layers[layer].wuv.data() + static_cast<size_t>(h) * D * m.kv_lora_rank;
      e = attend_op_projected(in, r, wuv, D, want.data());
    } else {
      const size_t off = static_cast<size_t>(h / group) * D;
      in.q = q + static_cast<size_t>(h) * D;
      in.k = hist.k.data() + off;
      in.v = hist.v.data() + off;
      in.dk = in.dv = D;
      in.scale = w_.softmax_scale;
      e = attend_op(in, r, want.data());
    }
    double err2 = 0.0, norm2 = 0.0;
    for (int32_t d = 0; d < D; ++d) {
      const double diff = static_cast<double>(got[h * D + d]) - want[d];
      err2 += diff * diff;
      norm2 += want[d] * want[d];
    }
    // NaN where the row is not finite (the end-to-end check reports it as such).
    heads[h] = {std::sqrt(err2), safety_ * e, std::sqrt(norm2)};
    if (reference) heads[h].input_error = rel_l2(want.data(), reference + h * D, D, floor);
  }
}

}  // namespace kv
