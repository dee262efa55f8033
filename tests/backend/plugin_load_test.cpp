// plugin_load_test.cpp — the built host plugin (libkvcheck_backend_host.so) as kvcheck loads it:
// one exported symbol, init and its refusals, the declared name, version and capabilities, the
// sizes it asks for, and an op's failure reported as a status and a NUL-terminated message.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "backend/abi_caps.h"
#include "backend_test_support.h"
#include "kernels/decode_splits.h"

namespace kv::test {
namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// init's result and message for one request.
struct InitResult {
  const kvcheck_backend* table;
  std::string err;
};

InitResult init_with(uint32_t abi_version, const kvcheck_host* host) {
  char err[256];
  memset(err, 'x', sizeof(err));
  kvcheck_backend_init_fn init = host_plugin_init();
  if (init == nullptr) return {nullptr, "not loaded"};
  const kvcheck_backend* t = init(abi_version, host, err, sizeof(err));
  return {t, t ? "" : std::string(err, strnlen(err, sizeof(err)))};
}

TEST(HostPlugin, ExportsOnlyItsEntryPoint) {
  void* h = host_plugin_handle();
  ASSERT_NE(h, nullptr) << dlerror();
  EXPECT_NE(dlsym(h, KVCHECK_BACKEND_INIT_SYMBOL), nullptr);
  // kvcheck's own code inside it stays hidden: kv::host::write_kv, kv::backend::op_name.
  EXPECT_EQ(dlsym(h, "_ZN2kv4host8write_kvERKNS_11WriteKvArgsE"), nullptr);
  EXPECT_EQ(dlsym(h, "_ZN2kv7backend7op_nameE10kvcheck_op"), nullptr);
}

TEST(HostPlugin, DeclaresItselfAndItsConventions) {
  const kvcheck_backend& b = host_plugin();
  EXPECT_EQ(b.struct_size, sizeof(kvcheck_backend));
  EXPECT_EQ(b.abi_version, static_cast<uint32_t>(KVCHECK_BACKEND_ABI_VERSION));
  ASSERT_NE(b.name, nullptr);
  EXPECT_STREQ(b.name, "builtin-host");
  ASSERT_NE(b.version, nullptr);
  EXPECT_TRUE(has(b.version, "kvcheck ") && strlen(b.version) > 8) << b.version;
  const kvcheck_caps& c = b.caps;
  EXPECT_EQ(c.struct_size, sizeof(kvcheck_caps));
  for (int32_t d : {KVCHECK_F32, KVCHECK_F16, KVCHECK_BF16, KVCHECK_FP8_E4M3})
    EXPECT_TRUE(c.cache_dtypes & KVCHECK_DTYPE_BIT(d)) << d;
  for (int32_t l : {KVCHECK_LAYOUT_KV_SEPARATE, KVCHECK_LAYOUT_KV_INTERLEAVED,
                    KVCHECK_LAYOUT_MLA_LATENT})
    EXPECT_TRUE(c.layouts & KVCHECK_LAYOUT_BIT(l)) << l;
  EXPECT_EQ(c.io_dtype, KVCHECK_F32);
  EXPECT_EQ(c.head_dims, nullptr);
  EXPECT_EQ(c.block_sizes, nullptr);
  EXPECT_EQ(c.lse_base, KVCHECK_LSE_NATURAL);
  EXPECT_TRUE(std::isinf(c.empty_row_lse) && c.empty_row_lse < 0);
  EXPECT_EQ(c.pad_seq_len, 0);
  EXPECT_EQ(c.pad_block_id, 0);
  EXPECT_EQ(c.needs_zeroed_blocks, 0);
  EXPECT_EQ(c.graph_support, KVCHECK_GRAPHS_FULL);
  EXPECT_EQ(backend::caps_refusal(c, {DType::fp8_e4m3, KVCHECK_LAYOUT_MLA_LATENT, 576, 1}), "");
}

TEST(HostPlugin, ImplementsEveryOpButTheFusedPrefill) {
  const kvcheck_backend& b = host_plugin();
  for (int op = 0; op < KVCHECK_NUM_OPS; ++op)
    EXPECT_EQ(backend::implements(b, static_cast<kvcheck_op>(op)), op != KVCHECK_OP_PAGED_PREFILL)
        << backend::op_name(static_cast<kvcheck_op>(op));
  EXPECT_NE(b.paged_decode_plan, nullptr);
  EXPECT_NE(b.plan_bytes, nullptr);
  EXPECT_NE(b.workspace_bytes, nullptr);
}

TEST(HostPlugin, AsksForKvchecksPlanAndDecodeWorkspace) {
  const kvcheck_backend& b = host_plugin();
  kvcheck_size_query q{};
  q.struct_size = sizeof(q);
  q.op = KVCHECK_OP_PAGED_DECODE;
  q.max_rows = q.max_seqs = 7;
  q.num_q_heads = 4;
  q.v_dim = 5;
  q.max_splits = 3;
  EXPECT_EQ(b.plan_bytes(b.self, &q), decode_plan_bytes(7));
  // partial_out [7][3][4][5] + partial_lse [7][3][4] floats.
  EXPECT_EQ(b.workspace_bytes(b.self, &q), (7u * 3 * 4 * 5 + 7u * 3 * 4) * sizeof(float));
  for (int op = 0; op < KVCHECK_NUM_OPS; ++op) {
    q.op = op;
    if (op != KVCHECK_OP_PAGED_DECODE) {
      EXPECT_EQ(b.workspace_bytes(b.self, &q), 0u) << op;
    }
  }
}

TEST(HostPlugin, RefusesAnotherAbiVersion) {
  const kvcheck_host host = host_for(kCpu);
  const InitResult r = init_with(KVCHECK_BACKEND_ABI_VERSION + 1, &host);
  EXPECT_EQ(r.table, nullptr);
  EXPECT_TRUE(has(r.err, "builtin-host: ABI version 2 asked, this backend speaks 1")) << r.err;
}

TEST(HostPlugin, RefusesACudaDevice) {
  const kvcheck_host host = host_for({kDLCUDA, 1});
  const InitResult r = init_with(KVCHECK_BACKEND_ABI_VERSION, &host);
  EXPECT_EQ(r.table, nullptr);
  EXPECT_TRUE(has(r.err, "runs on the host (kDLCPU) only, asked for device type 2 (kDLCUDA) id 1"))
      << r.err;
}

TEST(HostPlugin, RefusesOptionsAndANullHost) {
  const kvcheck_host host = host_for(kCpu, "splits=4");
  InitResult r = init_with(KVCHECK_BACKEND_ABI_VERSION, &host);
  EXPECT_EQ(r.table, nullptr);
  EXPECT_TRUE(has(r.err, "takes no options, got \"splits=4\"")) << r.err;
  r = init_with(KVCHECK_BACKEND_ABI_VERSION, nullptr);
  EXPECT_EQ(r.table, nullptr);
  EXPECT_TRUE(has(r.err, "kvcheck_host is NULL")) << r.err;
}

TEST(HostPlugin, AnOpThatFailsReturnsErrorAndATruncatedMessage) {
  const kvcheck_backend& b = host_plugin();
  ASSERT_NE(b.quant_fp8, nullptr);
  std::vector<float> x(8);
  backend::AbiBuilder build(kCpu);
  kvcheck_quant_fp8_args a = build.quant_fp8(QuantFp8Args{
      .x = x.data(), .y = x.data(), .row_stride = 4, .cols = 4, .num_rows = 2});
  a.x.dtype = KVCHECK_F16;
  char err[16];
  memset(err, 'x', sizeof(err));
  EXPECT_EQ(b.quant_fp8(b.self, &a, nullptr, err, sizeof(err)), KVCHECK_ERROR);
  EXPECT_EQ(std::string(err), "quant_fp8: x: d");  // 15 characters and the NUL
  EXPECT_TRUE(has(call(b.quant_fp8, a), "quant_fp8: x: dtype is f16, expected f32"));
  // A NULL args pointer and a 0-byte message buffer are refused, not crashed on.
  EXPECT_EQ(b.write_kv(b.self, nullptr, nullptr, nullptr, 0), KVCHECK_ERROR);
}

TEST(HostPlugin, AnExceptionOfTheHostOpBecomesAMessage) {
  // linear_attention refuses a state block below -1 by throwing std::invalid_argument.
  const kvcheck_backend& b = host_plugin();
  std::vector<int32_t> starts{0, 0}, blocks{-5}, init{0};
  backend::AbiBuilder build(kCpu);
  const kvcheck_linear_attention_args a = build.linear_attention(
      LinearAttnArgs{.seq_starts = starts.data(), .state_blocks = blocks.data(),
                     .has_initial_state = init.data(), .num_seqs = 1, .num_heads = 1,
                     .head_dim = 2},
      0, 0);
  EXPECT_TRUE(has(call(b.linear_attention, a),
                  "linear_attention: state block -5 of sequence 0"))
      << call(b.linear_attention, a);
}

}  // namespace
}  // namespace kv::test
