// mutants_test.cpp — each check of `kvcheck conform` can fail: kvcheck's host plugin with one op
// wrapped so that it calls the real op and then spoils one element of what it wrote (or writes
// where it must not) must fail on that op and only on it.
#include <gtest/gtest.h>

#include <cmath>

#include <cstdio>
#include <string>

#include "backend/abi_convert.h"
#include "conform/conform.h"
#include "kernels/host/host_ops.h"
#include "plugin/backend_library.h"

namespace kv::conform {
namespace {

const kvcheck_backend* g_host = nullptr;

float* data_of(const kvcheck_tensor& t) { return static_cast<float*>(t.dl.data); }

int32_t spoil_write_kv(void* s, const kvcheck_write_kv_args* a, void* st, char* e, size_t n) {
  const int32_t r = g_host->write_kv(s, a, st, e, n);
  static_cast<uint8_t*>(a->cache.k.dl.data)[0] ^= 1;  // a bit of the null block
  return r;
}
int32_t spoil_decode(void* s, const kvcheck_paged_decode_args* a, void* st, char* e, size_t n) {
  const int32_t r = g_host->paged_decode(s, a, st, e, n);
  data_of(a->out)[0] *= 1.01f;
  return r;
}
int32_t spoil_gather(void* s, const kvcheck_gather_kv_args* a, void* st, char* e, size_t n) {
  const int32_t r = g_host->gather_kv(s, a, st, e, n);
  data_of(a->k_out)[a->k_out.dl.shape[0] * a->k_out.dl.strides[0]] = 0.f;  // one row past
  return r;
}
int32_t spoil_varlen(void* s, const kvcheck_varlen_attention_args* a, void* st, char* e,
                     size_t n) {
  const int32_t r = g_host->varlen_attention(s, a, st, e, n);
  data_of(a->lse)[0] += 0.01f;
  return r;
}
int32_t spoil_merge(void* s, const kvcheck_merge_states_args* a, void* st, char* e, size_t n) {
  const int32_t r = g_host->merge_states(s, a, st, e, n);
  data_of(a->out)[a->out.dl.shape[0] * a->out.dl.strides[0] - 1] = NAN;
  return r;
}
int32_t spoil_linear(void* s, const kvcheck_linear_attention_args* a, void* st, char* e,
                     size_t n) {
  const int32_t r = g_host->linear_attention(s, a, st, e, n);
  data_of(a->state)[0] += 1.f;  // the null block's state
  return r;
}
int32_t spoil_fill(void* s, const kvcheck_fill_blocks_args* a, void* st, char* e, size_t n) {
  const int32_t r = g_host->fill_blocks(s, a, st, e, n);
  static_cast<uint8_t*>(a->cache.v.dl.data)[0] ^= 0x80;  // outside the filled blocks
  return r;
}
int32_t spoil_quant(void* s, const kvcheck_quant_fp8_args* a, void* st, char* e, size_t n) {
  const int32_t r = g_host->quant_fp8(s, a, st, e, n);
  if (a->scale_out.dl.data) data_of(a->scale_out)[0] *= 2.f;
  return r;
}

// The host plugin has no fused prefill: this one is the host op (kernels/host/paged_prefill.cpp).
int32_t fused_prefill(void*, const kvcheck_paged_prefill_args* a, void*, char* e, size_t n) {
  PagedPrefillArgs d;
  const std::string why = backend::from_abi(*a, &d);
  if (why.empty()) host::paged_prefill(d);
  if (!why.empty()) snprintf(e, n, "%s", why.c_str());
  return why.empty() ? KVCHECK_OK : KVCHECK_ERROR;
}
int32_t spoil_prefill(void* s, const kvcheck_paged_prefill_args* a, void* st, char* e,
                      size_t n) {
  const int32_t r = fused_prefill(s, a, st, e, n);
  data_of(a->out)[0] *= 1.01f;
  return r;
}

struct Mutant {
  const char* op;
  void (*apply)(kvcheck_backend&);
};

const Mutant kMutants[] = {
    {"write_kv", [](kvcheck_backend& b) { b.write_kv = spoil_write_kv; }},
    {"paged_decode", [](kvcheck_backend& b) { b.paged_decode = spoil_decode; }},
    {"gather_kv", [](kvcheck_backend& b) { b.gather_kv = spoil_gather; }},
    {"varlen_attention", [](kvcheck_backend& b) { b.varlen_attention = spoil_varlen; }},
    {"merge_states", [](kvcheck_backend& b) { b.merge_states = spoil_merge; }},
    {"linear_attention", [](kvcheck_backend& b) { b.linear_attention = spoil_linear; }},
    {"fill_blocks", [](kvcheck_backend& b) { b.fill_blocks = spoil_fill; }},
    {"quant_fp8", [](kvcheck_backend& b) { b.quant_fp8 = spoil_quant; }},
    {"paged_prefill", [](kvcheck_backend& b) { b.paged_prefill = spoil_prefill; }},
};

TEST(ConformMutants, TheFusedPrefillOfTheHostOpsConforms) {
  BackendLibrary lib(KVCHECK_HOST_BACKEND, /*kDLCPU*/ 1, 0);
  kvcheck_backend b = lib.table();
  b.paged_prefill = fused_prefill;
  const ConformReport r = run_conform(b, ConformOptions{});
  EXPECT_TRUE(r.all_passed());
  for (const OpReport& o : r.ops) {
    if (o.op == "paged_prefill") {
      EXPECT_GT(o.cases, 100) << "too few cases";
    }
  }
}

TEST(ConformMutants, EachSpoiledOpFailsAndOnlyIt) {
  BackendLibrary lib(KVCHECK_HOST_BACKEND, /*kDLCPU*/ 1, 0);
  g_host = &lib.table();
  for (const Mutant& m : kMutants) {
    kvcheck_backend b = lib.table();
    m.apply(b);
    const ConformReport r = run_conform(b, ConformOptions{});
    EXPECT_FALSE(r.all_passed()) << m.op;
    for (const OpReport& o : r.ops) {
      if (o.op == m.op)
        EXPECT_FALSE(o.ok()) << m.op << " was not caught";
      else
        EXPECT_TRUE(o.ok()) << o.op << " failed with " << m.op << " spoiled: " << o.first_failure;
    }
  }
}

}  // namespace
}  // namespace kv::conform
