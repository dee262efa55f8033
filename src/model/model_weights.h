// model_weights.h — the synthetic model's fixed random weights, shared by the engine (which
// uploads them to the device) and the float64 reference (which reads them on the host).
//
// Every layer: x = rms_norm(h), then the layer's mixer produces o ([num_q_heads][head_dim] per
// token, "the attention output" the checks compare), then h += Wo · o', where o' = quant_fp8(o)
// for attention and mla layers (the batch-wide op) and o' = o for linear layers. After the last
// layer: logits = Wlm · rms_norm(h); next token = argmax. H = num_q_heads, D = head_dim.
//
// attention: q = Wq x; k = Wk x; v = Wv x + bv; o = softmax(q·K / sqrt(D)) V per head (GQA).
//
// mla (R = kv_lora_rank, P = qk_rope_dim): the cache holds, per token, one latent row
//   lat = [c | kr] = Wdkv x + bdkv               (R + P values; c = lat[0, R), kr = lat[R, R+P))
//   per head h: q_nope_h = Wqn_h x (D), q_rope_h = Wqr_h x (P),
//               k_h,t = [Wuk_h c_t | kr_t],  v_h,t = Wuv_h c_t  (Wuk_h, Wuv_h are [D][R])
//   o_h = softmax((q_nope_h·(Wuk_h c_t) + q_rope_h·kr_t) / sqrt(D + P)) v_h,t.
//   The reference computes exactly that. The engine runs it absorbed (as FlashMLA backends do):
//   q_lat_h = [Wuk_h^T q_nope_h | q_rope_h] (one linear with the folded weight Wq_abs), attention
//   of q_lat over the latent rows with V = c, then o_h = Wuv_h · (that output) (a grouped linear).
//
// linear: q = Wq x; k = Wk x; v = Wv x; gate = Wg x + bg ([H] logits); o = the gated linear
//   attention of op_args.cuh (LinearAttnArgs) with scale 1 / sqrt(D), state zero at position 0.
//
// Why the sentinel: the batch-wide fp8 quantisation takes amax over the rows of the batch, which
// would make every row's rounding depend on which other requests share the step — a legitimate
// difference the reference could not reproduce per request. So in every attention-like layer,
// feature 0 of head 0 of o is the same constant in every real row and no element of o is larger in
// magnitude: the correct op is batch invariant, and only rows that are not real (padded, never
// written) can change it — which is the seed-001 bug class.
//   attention: feature 0 of KV head 0 of V has no weights and the bias `sentinel`.
//   mla: latent feature 0 has no weights and the bias `latent_constant` (c[0] is constant, so
//        Wuk_h's column 0 is zero: it adds nothing to scores), and row 0 of Wuv_0 is
//        (mla_sentinel / latent_constant, 0, ..., 0); column 0 of every other row of Wuv is zero.
// Both constants go through the cache, so each is a power-of-two multiple of the scale its cache
// reads it back with (v_scale for `sentinel`, k_scale for `latent_constant`; 1 for a cache that
// is not fp8): stored as value / scale, a power of two, it is exact in e4m3 and reads back as
// exactly itself, in float, whatever the scale — a calibrated 0.0173 as well as 0.0625. With a
// power-of-two scale (and in bf16/f16/f32 caches) both sentinels are powers of two and
// latent_constant is 1: the weights are the same as before calibrated scales were accepted.
//   P = the smallest power of two at or above 1.15 x the largest |o| element any input can produce
//     in any attention or mla layer (Cauchy-Schwarz with ||x|| = sqrt(hidden) after rms_norm; mla:
//     |(Wuv_h c)_j| <= ||Wuv_h row j|| max ||c||, o_h being a convex combination of the v_h,t,
//     with max ||c|| from a rigorous bound of ||Wdkv||_2). The margin covers the rounding of the
//     cache dtype on the other values (fp8: relative 2^-4).
//   sentinel = v_scale x 2^a, the smallest such value at or above P (P itself for a power-of-two
//     scale). Not merely above the bound: the drift check's floor, half a token's RMS head norm,
//     is dominated by the sentinel of head 0, and at or above P it is never lower than with the
//     power-of-two scales the tolerances were calibrated with. A code 2^a above 448 saturates to
//     448 in an fp8 cache (a scale too small for the model's values): the sentinel then reads
//     back as 448 x v_scale, which every other value saturates to at most.
//   latent_constant = k_scale x 2^b, the value nearest 1 whose code 2^b is an e4m3 power of two
//     (2^-9 .. 2^8).
//   mla_sentinel = latent_constant x 2^c, the smallest such value at or above P; it never enters
//     a cache (o is computed from the latent), so only the product Wuv_0[0][0] x latent_constant,
//     a power of two times a float, must be exact.
// quant_scale() is the constant as read back from the cache, / 448: the amax of every correct
// batch. The engine's float ops reproduce the constant in a row up to an ulp where the row mixes
// states (a split-KV or context merge, a convex combination of a constant that is not a power of
// two): the tolerances absorb that, as they did before calibrated scales.
#pragma once

#include <cstdint>
#include <vector>

#include "scenario/scenario.h"

namespace kv {

struct LayerWeights {
  LayerKind kind = LayerKind::attention;
  // attention and linear
  std::vector<float> wq;  // [H * D][hidden]
  std::vector<float> wk;  // [kv_heads * D][hidden] (linear: [H * D][hidden])
  std::vector<float> wv;  // [kv_heads * D][hidden] (linear: [H * D][hidden])
  std::vector<float> bv;  // attention: [kv_heads * D]; sentinel at 0
  // linear only
  std::vector<float> wg;  // [H][hidden]
  std::vector<float> bg;  // [H]
  // mla only
  std::vector<float> wdkv;    // [R + P][hidden]; row 0 zero
  std::vector<float> bdkv;    // [R + P]; latent_constant at 0, else 0
  std::vector<float> wqn;     // [H * D][hidden]
  std::vector<float> wqr;     // [H * P][hidden]
  std::vector<float> wuk;     // [H][D][R]; column 0 zero
  std::vector<float> wuv;     // [H][D][R]; row 0 of head 0: (mla_sentinel / latent_constant, 0..)
  std::vector<float> wq_abs;  // [H][R + P][hidden]: rows [0,R) = Wuk_h^T Wqn_h (folded in double),
                              //                      rows [R,R+P) = Wqr_h. What the engine uses.
  // every kind
  std::vector<float> wo;  // [hidden][H * D]
};

struct ModelWeights {
  ModelSpec spec;
  std::vector<float> embed;  // [vocab][hidden]
  std::vector<LayerWeights> layers;
  std::vector<float> lm_head;  // [vocab][hidden]
  float sentinel = 0.0f;         // attention: see above
  float latent_constant = 1.0f;  // mla: latent feature 0 of every token
  float mla_sentinel = 0.0f;     // mla: feature 0 of head 0 of o
  float softmax_scale = 0.0f;      // attention: 1 / sqrt(head_dim)
  float mla_softmax_scale = 0.0f;  // mla: 1 / sqrt(head_dim + qk_rope_dim)

  // The correct fp8 per-tensor scale of the batch-wide op after `layer` (attention or mla) when
  // the cache is `cache`: the layer's sentinel as read back from that cache (k_scale / v_scale
  // apply to fp8 only), / 448. Throws std::logic_error for a linear layer, which has no fp8 op.
  float quant_scale(size_t layer, const CacheSpec& cache) const;
};

// The weights of `spec` whose constant features read back exactly from `cache` (its dtype and
// scales; the default, a bf16 cache, has scales of 1).
ModelWeights make_model_weights(const ModelSpec& spec, const CacheSpec& cache = {});

inline constexpr float kRmsNormEps = 1e-6f;

}  // namespace kv
