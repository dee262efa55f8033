/* backend_minimal.c — a small kvcheck backend plugin in plain C11: write_kv and paged_decode on
 * the CPU, over the ABI of include/kvcheck/backend.h and nothing else of kvcheck.
 *
 * Built by examples/backend-minimal/CMakeLists.txt as libkvcheck_backend_minimal.so (and, with
 * -DBROKEN_TAIL, as libkvcheck_backend_minimal_broken.so: a decode that drops each sequence's
 * last token, the mutant `kvcheck conform` must catch). README.md in this folder walks through it.
 *
 * What it declares (make_table below), and why:
 *   - cache dtypes f32, bf16 and fp8 e4m3 (the conversions are written out here, rounding to
 *     nearest even as kvcheck's do, so write_kv stores the same bits); no f16;
 *   - every layout: all addressing goes through the DLTensor strides, so separate, interleaved and
 *     MLA latent caches (v a view of k) are the same code;
 *   - any head dim and block size; q/out in f32; natural-log LSE; an empty row's lse is -inf;
 *   - padded rows come as seq_len 0 / block 0 and are left untouched;
 *   - new blocks need no zeroing: the decode multiplies only within seq_len (it masks the tail),
 *     so stale bytes past a sequence's end never reach the output;
 *   - no plan step and no workspace: one pass with an online softmax, accumulating into `out`;
 *   - full CUDA-graph support: the ops keep no state and read everything at call time.
 * The other ops (gather_kv, varlen_attention, ...) are NULL: kvcheck runs its built-in ones.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kvcheck/backend.h"

/* ---- element conversions (bit by bit, round to nearest even) --------------------------------- */

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

/* fp8 e4m3fn: no Inf; NaN is 0x7f / 0xff; the largest finite value is 448. */
static float fp8_to_f32(uint8_t b) {
  uint32_t exp = (b >> 3) & 0xfu, mant = b & 0x7u;
  float v;
  if (exp == 0xfu && mant == 0x7u) return f32_from_bits(0x7fc00000u | ((uint32_t)(b >> 7) << 31));
  if (exp == 0) v = (float)mant * (1.0f / 512.0f); /* subnormal: mant * 2^-9 */
  else v = f32_from_bits(((exp - 7 + 127) << 23) | (mant << 20));
  return (b & 0x80u) ? -v : v;
}

/* Saturating (finite values beyond 448 become ±448), NaN and ±Inf become NaN. */
static uint8_t f32_to_fp8(float f) {
  uint32_t u = f32_bits(f), abs = u & 0x7fffffffu;
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  float a = f32_from_bits(abs);
  if (abs >= 0x7f800000u) return (uint8_t)(sign | 0x7fu);
  if (a >= 448.0f) return (uint8_t)(sign | 0x7eu);
  if (a < 0.015625f) { /* below 2^-6: subnormal, unit 2^-9 (q == 8 carries into a normal) */
    float scaled = a * 512.0f;
    uint32_t q = (uint32_t)scaled;
    float rem = scaled - (float)q;
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return (uint8_t)(sign | q);
  }
  uint32_t mant = abs & 0x7fffffu;
  uint32_t b = ((((abs >> 23) - 127 + 7)) << 3) | (mant >> 20), rest = mant & 0xfffffu;
  if (rest > 0x80000u || (rest == 0x80000u && (b & 1u))) ++b;
  if (b > 0x7eu) b = 0x7eu;
  return (uint8_t)(sign | b);
}

/* ---- tensors: every address through the strides ---------------------------------------------- */

static char* base_of(const kvcheck_tensor* t) { return (char*)t->dl.data + t->dl.byte_offset; }

/* Element (i0, i1, i2[, i3]) of a tensor, as an element index. */
static int64_t at3(const kvcheck_tensor* t, int64_t i0, int64_t i1, int64_t i2) {
  return i0 * t->dl.strides[0] + i1 * t->dl.strides[1] + i2 * t->dl.strides[2];
}

static int64_t at4(const kvcheck_tensor* t, int64_t b, int64_t e, int64_t h, int64_t f) {
  return b * t->dl.strides[0] + e * t->dl.strides[1] + h * t->dl.strides[2] + f * t->dl.strides[3];
}

static float load_cache(const kvcheck_tensor* t, int32_t dtype, int64_t idx, float scale) {
  const char* p = base_of(t);
  switch (dtype) {
    case KVCHECK_F32: return ((const float*)p)[idx];
    case KVCHECK_BF16: return bf16_to_f32(((const uint16_t*)p)[idx]);
    default: return fp8_to_f32(((const uint8_t*)p)[idx]) * scale;
  }
}

static void store_cache(const kvcheck_tensor* t, int32_t dtype, int64_t idx, float v,
                        float scale) {
  char* p = base_of(t);
  switch (dtype) {
    case KVCHECK_F32: ((float*)p)[idx] = v; break;
    case KVCHECK_BF16: ((uint16_t*)p)[idx] = f32_to_bf16(v); break;
    default: ((uint8_t*)p)[idx] = f32_to_fp8(v / scale); break;
  }
}

static int32_t fail(char* err, size_t err_size, const char* msg) {
  if (err != NULL && err_size > 0) snprintf(err, err_size, "%s", msg);
  return KVCHECK_ERROR;
}

static int dtype_supported(int32_t d) {
  return d == KVCHECK_F32 || d == KVCHECK_BF16 || d == KVCHECK_FP8_E4M3;
}

static int32_t check_cache(const kvcheck_paged_kv* c, const char* op, char* err, size_t n) {
  char msg[160];
  if (!dtype_supported(c->dtype)) {
    snprintf(msg, sizeof msg, "%s: cache dtype %d is not f32, bf16 or fp8_e4m3", op, c->dtype);
    return fail(err, n, msg);
  }
  if (c->k.dl.ndim != 4 || (c->v.dl.data != NULL && c->v.dl.ndim != 4)) {
    snprintf(msg, sizeof msg, "%s: cache views must be 4-d", op);
    return fail(err, n, msg);
  }
  return KVCHECK_OK;
}

/* ---- write_kv -------------------------------------------------------------------------------- */

static int32_t write_kv(void* self, const kvcheck_write_kv_args* a, void* stream, char* err,
                        size_t err_size) {
  (void)self, (void)stream;
  const kvcheck_paged_kv* c = &a->cache;
  if (check_cache(c, "write_kv", err, err_size) != KVCHECK_OK) return KVCHECK_ERROR;
  if (a->k.dtype != KVCHECK_F32 || (a->v.dl.data != NULL && a->v.dtype != KVCHECK_F32))
    return fail(err, err_size, "write_kv: k and v rows must be f32");
  const int64_t* slots = (const int64_t*)base_of(&a->slot_mapping);
  const int64_t slot_stride = a->slot_mapping.dl.strides[0];
  for (int32_t t = 0; t < a->num_tokens; ++t) {
    const int64_t slot = slots[t * slot_stride];
    if (slot < 0) continue; /* a padded row */
    const int64_t block = slot / c->block_size, entry = slot % c->block_size;
    for (int32_t h = 0; h < c->num_kv_heads; ++h) {
      for (int32_t d = 0; d < c->head_dim; ++d) {
        const float k = ((const float*)base_of(&a->k))[at3(&a->k, t, h, d)];
        store_cache(&c->k, c->dtype, at4(&c->k, block, entry, h, d), k, c->k_scale);
        if (a->v.dl.data == NULL) continue; /* MLA: the latent row is K, written once */
        const float v = ((const float*)base_of(&a->v))[at3(&a->v, t, h, d)];
        store_cache(&c->v, c->dtype, at4(&c->v, block, entry, h, d), v, c->v_scale);
      }
    }
  }
  return KVCHECK_OK;
}

/* ---- paged_decode ---------------------------------------------------------------------------- */

/* One (row, query head): an online softmax over the row's tokens, accumulated straight into the
 * output (o is rescaled whenever the running maximum grows), so no scratch is needed. */
static void decode_head(const kvcheck_paged_decode_args* a, int32_t row, int32_t h,
                        int32_t seq_len) {
  const kvcheck_paged_kv* c = &a->cache;
  const int32_t kv_head = h / (a->num_q_heads / c->num_kv_heads);
  const float* q = (const float*)base_of(&a->q);
  float* o = (float*)base_of(&a->out);
  const int32_t* table = (const int32_t*)base_of(&a->block_table);
  float m = -INFINITY, l = 0.0f;
  for (int32_t d = 0; d < a->v_dim; ++d) o[at3(&a->out, row, h, d)] = 0.0f;
  for (int32_t j = 0; j < seq_len; ++j) { /* only within seq_len: the block's tail is masked */
    const int64_t block = table[row * a->block_table.dl.strides[0] +
                                (j / c->block_size) * a->block_table.dl.strides[1]];
    const int64_t entry = j % c->block_size;
    float s = 0.0f;
    for (int32_t d = 0; d < c->head_dim; ++d)
      s += q[at3(&a->q, row, h, d)] *
           load_cache(&c->k, c->dtype, at4(&c->k, block, entry, kv_head, d), c->k_scale);
    s *= a->scale;
    const float m_new = s > m ? s : m; /* a NaN score keeps m, and its p = NaN reaches o */
    const float alpha = expf(m - m_new), p = expf(s - m_new);
    l = l * alpha + p;
    for (int32_t d = 0; d < a->v_dim; ++d) {
      const float v = load_cache(&c->v, c->dtype, at4(&c->v, block, entry, kv_head, d),
                                 c->v_scale);
      float* od = &o[at3(&a->out, row, h, d)];
      *od = *od * alpha + p * v;
    }
    m = m_new;
  }
  for (int32_t d = 0; d < a->v_dim; ++d) o[at3(&a->out, row, h, d)] /= l;
  if (a->lse.dl.data != NULL) {
    float* lse = (float*)base_of(&a->lse);
    lse[row * a->lse.dl.strides[0] + h * a->lse.dl.strides[1]] = m + logf(l);
  }
}

static int32_t paged_decode(void* self, const kvcheck_paged_decode_args* a, void* stream,
                            char* err, size_t err_size) {
  (void)self, (void)stream;
  const kvcheck_paged_kv* c = &a->cache;
  if (check_cache(c, "paged_decode", err, err_size) != KVCHECK_OK) return KVCHECK_ERROR;
  if (a->q.dtype != KVCHECK_F32 || a->out.dtype != KVCHECK_F32)
    return fail(err, err_size, "paged_decode: q and out must be f32 (io_dtype)");
  if (c->num_kv_heads <= 0 || a->num_q_heads % c->num_kv_heads != 0)
    return fail(err, err_size, "paged_decode: num_q_heads is not a multiple of num_kv_heads");
  const int32_t* seq_lens = (const int32_t*)base_of(&a->seq_lens);
  for (int32_t row = 0; row < a->num_rows; ++row) {
    int32_t seq_len = seq_lens[row * a->seq_lens.dl.strides[0]];
#ifdef BROKEN_TAIL
    seq_len -= 1; /* the mutant: the last token (the one just written) is never attended */
#endif
    if (seq_len <= 0) continue; /* a padded row: untouched */
    for (int32_t h = 0; h < a->num_q_heads; ++h) decode_head(a, row, h, seq_len);
  }
  return KVCHECK_OK;
}

/* ---- the table and the entry point ----------------------------------------------------------- */

static kvcheck_backend make_table(void) {
  kvcheck_backend b;
  memset(&b, 0, sizeof b); /* every op not set below is NULL: kvcheck's built-in runs it */
  b.struct_size = sizeof b;
  b.abi_version = KVCHECK_BACKEND_ABI_VERSION;
#ifdef BROKEN_TAIL
  b.name = "minimal-broken";
#else
  b.name = "minimal";
#endif
  b.version = "1.0";
  b.caps.struct_size = sizeof b.caps;
  b.caps.cache_dtypes = KVCHECK_DTYPE_BIT(KVCHECK_F32) | KVCHECK_DTYPE_BIT(KVCHECK_BF16) |
                        KVCHECK_DTYPE_BIT(KVCHECK_FP8_E4M3);
  b.caps.layouts = KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_KV_SEPARATE) |
                   KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_KV_INTERLEAVED) |
                   KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_MLA_LATENT);
  b.caps.io_dtype = KVCHECK_F32;
  b.caps.head_dims = NULL; /* any */
  b.caps.block_sizes = NULL;
  b.caps.lse_base = KVCHECK_LSE_NATURAL;
  b.caps.empty_row_lse = -INFINITY;
  b.caps.pad_seq_len = 0;
  b.caps.pad_block_id = 0;
  b.caps.needs_zeroed_blocks = 0; /* the decode masks the tail */
  b.caps.graph_support = KVCHECK_GRAPHS_FULL;
  b.write_kv = write_kv;
  b.paged_decode = paged_decode;
  return b;
}

KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(uint32_t abi_version,
                                                                   const kvcheck_host* host,
                                                                   char* err, size_t err_size) {
  static kvcheck_backend table;
  char msg[160];
  if (abi_version != KVCHECK_BACKEND_ABI_VERSION) {
    snprintf(msg, sizeof msg, "minimal: ABI version %u asked, this backend speaks %d",
             (unsigned)abi_version, KVCHECK_BACKEND_ABI_VERSION);
    fail(err, err_size, msg);
    return NULL;
  }
  if (host == NULL || host->device.device_type != kDLCPU) {
    fail(err, err_size, "minimal: runs on the host (kDLCPU) only");
    return NULL;
  }
  if (host->options != NULL && host->options[0] != '\0') {
    fail(err, err_size, "minimal: takes no options");
    return NULL;
  }
  table = make_table();
  return &table;
}
