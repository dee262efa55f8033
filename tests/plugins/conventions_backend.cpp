// conventions_backend.cpp — a host plugin that declares conventions other than kvcheck's own and
// keeps them, so that the tests can show the engine bridging each declaration (BackendDevice):
//   io dtype bf16      q and out of paged_decode, varlen_attention and merge_states are bf16;
//   lse base 2, +inf   every lse it writes or reads is log2, and +inf for a row with no key;
//   padding (1, -1)    graph-padded decode rows come with seq_len 1 and block id -1 (as do the
//                      unused block-table entries): it must not read them.
// The math is kvcheck's host ops: the table of libkvcheck_backend_host (its host_backend.cpp,
// compiled in here with its entry point renamed), wrapped op by op to translate each convention.
// Built as libkvtest_conventions.so; -DLIE_LSE builds libkvtest_conventions_lie.so, which declares
// base 2 but hands out natural logs: the bug class kvcheck must catch (a merge across bases).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/dtype.cuh"
#include "host_plugin.h"
#include "kvcheck/backend.h"

namespace {

using kv::bf16_to_f32;
using kv::f32_to_bf16;

const kvcheck_backend* g_host = nullptr;  // the wrapped table

// Elements a row tensor [rows][...] spans at its strides (0 when absent or empty).
int64_t span(const kvcheck_tensor& t) {
  if (t.dl.data == nullptr || t.dl.ndim == 0 || t.dl.shape[0] == 0) return 0;
  return t.dl.shape[0] * t.dl.strides[0];
}

// A bf16 tensor as float32 at the same strides: the copy, and `t` pointed at it.
std::vector<float> widen(kvcheck_tensor& t) {
  std::vector<float> f(static_cast<size_t>(span(t)));
  const auto* h = static_cast<const uint16_t*>(t.dl.data);
  for (size_t i = 0; i < f.size(); ++i) f[i] = bf16_to_f32(h[i]);
  if (!f.empty()) t.dl.data = f.data();
  t.dtype = KVCHECK_F32;
  t.dl.dtype = {kDLFloat, 32, 1};
  return f;
}

// The float32 copy written back into the caller's bf16 tensor.
void narrow(const std::vector<float>& f, const kvcheck_tensor& caller) {
  auto* h = static_cast<uint16_t*>(caller.dl.data);
  for (size_t i = 0; i < f.size(); ++i) h[i] = f32_to_bf16(f[i]);
}

// lse between kvcheck's convention (natural, -inf) and the declared one (base 2, +inf).
float to_declared(float natural) {
#ifdef LIE_LSE
  return natural;  // the bug: natural logs handed out as if they were base 2
#else
  return std::isinf(natural) && natural < 0 ? INFINITY : natural * static_cast<float>(M_LOG2E);
#endif
}
float from_declared(float base2) {
  return std::isinf(base2) && base2 > 0 ? -INFINITY : base2 * static_cast<float>(M_LN2);
}

// A float32 lse tensor [rows][heads] as natural logs: the copy, and `t` pointed at it.
std::vector<float> lse_natural(kvcheck_tensor& t) {
  std::vector<float> f(static_cast<size_t>(span(t)));
  const auto* in = static_cast<const float*>(t.dl.data);
  for (size_t i = 0; i < f.size(); ++i) f[i] = from_declared(in[i]);
  if (!f.empty()) t.dl.data = f.data();
  return f;
}

void lse_declare(const kvcheck_tensor& t) {
  auto* p = static_cast<float*>(t.dl.data);
  for (int64_t i = 0; i < span(t); ++i) p[i] = to_declared(p[i]);
}

int32_t paged_decode(void* self, const kvcheck_paged_decode_args* in, void* stream, char* err,
                     size_t n) {
  kvcheck_paged_decode_args a = *in;
  std::vector<float> q = widen(a.q), out = widen(a.out);
  // Padded rows (block id -1) are no rows: seq_len 0 for the host op, which skips them.
  std::vector<int32_t> lens(static_cast<size_t>(a.num_rows));
  const auto* table = static_cast<const int32_t*>(a.block_table.dl.data);
  const int64_t stride = a.block_table.dl.ndim == 2 ? a.block_table.dl.strides[0] : 0;
  for (int32_t r = 0; r < a.num_rows; ++r) {
    lens[r] = static_cast<const int32_t*>(a.seq_lens.dl.data)[r];
    if (table[r * stride] < 0) lens[r] = 0;
  }
  if (!lens.empty()) a.seq_lens.dl.data = lens.data();
  const int32_t status = g_host->paged_decode(self, &a, stream, err, n);
  if (status != KVCHECK_OK) return status;
  narrow(out, in->out);
  if (in->lse.dl.data) lse_declare(in->lse);
  return KVCHECK_OK;
}

int32_t varlen_attention(void* self, const kvcheck_varlen_attention_args* in, void* stream,
                         char* err, size_t n) {
  kvcheck_varlen_attention_args a = *in;
  std::vector<float> q = widen(a.q), out = widen(a.out);
  const int32_t status = g_host->varlen_attention(self, &a, stream, err, n);
  if (status != KVCHECK_OK) return status;
  narrow(out, in->out);
  lse_declare(in->lse);
  return KVCHECK_OK;
}

int32_t merge_states(void* self, const kvcheck_merge_states_args* in, void* stream, char* err,
                     size_t n) {
  kvcheck_merge_states_args a = *in;
  std::vector<float> oa = widen(a.out_a), ob = widen(a.out_b), out = widen(a.out);
  std::vector<float> la = lse_natural(a.lse_a), lb = lse_natural(a.lse_b);
  const int32_t status = g_host->merge_states(self, &a, stream, err, n);
  if (status != KVCHECK_OK) return status;
  narrow(out, in->out);
  if (in->lse_out.dl.data) lse_declare(in->lse_out);
  return KVCHECK_OK;
}

kvcheck_backend make_table(const kvcheck_backend& host) {
  kvcheck_backend b = host;
  b.name = "test-conventions";
  b.caps.io_dtype = KVCHECK_BF16;
  b.caps.lse_base = KVCHECK_LSE_BASE2;
  b.caps.empty_row_lse = INFINITY;
  b.caps.pad_seq_len = 1;
  b.caps.pad_block_id = -1;
  b.paged_decode = paged_decode;
  b.varlen_attention = varlen_attention;
  b.merge_states = merge_states;
  return b;
}

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  return wrap_host_plugin(abi_version, host, err, err_size, &g_host, make_table);
}
