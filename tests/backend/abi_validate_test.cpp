// abi_validate_test.cpp — from_abi refuses what kvcheck's descriptors cannot take, with a message
// that names the op, the field and the reason, and never throws; plus the small readers of a
// backend's declaration (op names from the op table, implements, caps_refusal).
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "backend/abi_caps.h"
#include "backend/abi_convert.h"
#include "ops/op_table.h"

namespace kv::backend {
namespace {

constexpr DLDevice kCpu = {kDLCPU, 0};
std::vector<float> buf(1 << 16);

// A valid write_kv call over a plain bf16 cache: 5 tokens, 2 heads of 4 features.
struct WriteKvCall {
  AbiBuilder build{kCpu};
  std::vector<int64_t> slots = std::vector<int64_t>(5, -1);
  PagedKv cache = make_paged_kv(buf.data(), KvLayout::kv_separate, DType::bf16, 6, 3, 2, 4);
  kvcheck_write_kv_args abi = build.write_kv(WriteKvArgs{.cache = cache,
                                                         .k = buf.data() + 4096,
                                                         .v = buf.data() + 8192,
                                                         .k_row_stride = 8,
                                                         .v_row_stride = 9,
                                                         .slot_mapping = slots.data(),
                                                         .num_tokens = 5});
  // from_abi's message, with *out left as it was on failure.
  std::string convert() {
    WriteKvArgs out;
    out.num_tokens = -7;
    const std::string why = from_abi(abi, &out);
    if (!why.empty()) {
      EXPECT_EQ(out.num_tokens, -7) << "out written despite: " << why;
    }
    return why;
  }
};

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

TEST(AbiValidate, AcceptsTheBuildersOutput) { EXPECT_EQ(WriteKvCall().convert(), ""); }

TEST(AbiValidate, RefusesAStructSmallerThanV1) {
  WriteKvCall c;
  c.abi.struct_size = 8;
  EXPECT_TRUE(has(c.convert(), "write_kv: args: struct_size 8 is less than the v1 size"));
  WriteKvCall d;
  d.abi.cache.struct_size = 4;
  EXPECT_TRUE(has(d.convert(), "write_kv: cache: struct_size 4"));
}

TEST(AbiValidate, RefusesWrongDtypesBothWays) {
  WriteKvCall c;
  c.abi.k.dtype = KVCHECK_BF16;
  EXPECT_TRUE(has(c.convert(), "k: dtype is bf16, expected f32")) << c.convert();
  WriteKvCall d;
  d.abi.k.dl.dtype = {kDLFloat, 16, 1};  // the kvcheck dtype says f32
  EXPECT_TRUE(has(d.convert(), "k: dl.dtype {code 2, bits 16, lanes 1} does not match f32"));
  WriteKvCall e;
  e.abi.cache.dtype = KVCHECK_I32;
  EXPECT_TRUE(has(e.convert(), "cache: dtype 16 is not a cache dtype")) << e.convert();
}

TEST(AbiValidate, RefusesShapesAndStridesKvcheckCannotExpress) {
  WriteKvCall c;
  c.abi.k.dl.ndim = 2;
  EXPECT_TRUE(has(c.convert(), "k: ndim is 2, expected 3"));
  WriteKvCall d;
  d.abi.k.dl.strides[2] = 2;
  EXPECT_TRUE(has(d.convert(), "k: the innermost stride is 2, expected 1"));
  WriteKvCall e;
  e.abi.v.dl.strides[1] = 5;  // heads not packed
  EXPECT_TRUE(has(e.convert(), "v: strides[1] is 5, expected 4")) << e.convert();
  WriteKvCall f;
  f.abi.slot_mapping.dl.shape[0] = 4;  // fewer than num_tokens
  EXPECT_TRUE(has(f.convert(), "slot_mapping: shape[0] is 4, expected at least 5"));
  WriteKvCall g;
  g.abi.k.dl.strides = nullptr;
  EXPECT_TRUE(has(g.convert(), "k: shape and strides must not be NULL"));
  WriteKvCall h;
  h.abi.cache.block_size = 0;
  EXPECT_TRUE(has(h.convert(), "cache: block_size 0 is not positive"));
}

TEST(AbiValidate, RefusesALayoutThePointersDoNotDescribe) {
  WriteKvCall c;
  c.abi.cache.layout = KVCHECK_LAYOUT_KV_INTERLEAVED;
  EXPECT_TRUE(has(c.convert(), "declared kv_interleaved but k, v and their strides describe "
                               "kv_separate"))
      << c.convert();
  WriteKvCall d;
  d.abi.cache.layout = KVCHECK_LAYOUT_MLA_LATENT;
  EXPECT_TRUE(has(d.convert(), "declared mla_latent"));
  WriteKvCall e;
  e.abi.cache.layout = 7;
  EXPECT_TRUE(has(e.convert(), "layout 7 is not a kvcheck_kv_layout"));
}

TEST(AbiValidate, HonoursByteOffset) {
  WriteKvCall c;
  c.abi.k.dl.data = static_cast<char*>(c.abi.k.dl.data) - 64;
  c.abi.k.dl.byte_offset = 64;
  WriteKvArgs out;
  ASSERT_EQ(from_abi(c.abi, &out), "");
  EXPECT_EQ(out.k, buf.data() + 4096);
}

TEST(AbiValidate, RefusesTensorsThatMustShareOneStride) {
  AbiBuilder build(kCpu);
  VarlenAttnArgs a{.q = buf.data(), .q_row_stride = 8, .k = buf.data(), .v = buf.data(),
                   .kv_row_stride = 4, .q_starts = nullptr, .k_starts = nullptr,
                   .out = buf.data(), .out_row_stride = 8, .lse = buf.data(), .num_seqs = 0,
                   .num_q_heads = 2, .num_kv_heads = 1, .head_dim = 4};
  kvcheck_varlen_attention_args abi = build.varlen_attention(a, 3, 3);
  abi.v.dl.strides[0] = 6;
  VarlenAttnArgs out;
  EXPECT_TRUE(has(from_abi(abi, &out), "varlen_attention: v: row stride 6 differs from 4"));
}

TEST(AbiValidate, RefusesAPlanTooSmallForKvchecksFormatAndABadPattern) {
  AbiBuilder build(kCpu);
  PagedDecodeArgs d;
  d.cache = make_paged_kv(buf.data(), KvLayout::kv_separate, DType::f32, 4, 2, 1, 4);
  d.split_meta = reinterpret_cast<const int32_t*>(buf.data());
  d.num_rows = 3;
  d.num_q_heads = 1;
  const DecodeBuffers small{.plan = buf.data(), .plan_bytes = 12};
  PagedDecodeArgs out;
  EXPECT_TRUE(has(from_abi(build.paged_decode(d, small), &out),
                  "paged_decode: plan: 12 bytes, kvcheck's plan of 3 rows takes 16"));
  kvcheck_fill_blocks_args f = build.fill_blocks(FillBlocksArgs{.cache = d.cache});
  f.pattern = 9;
  FillBlocksArgs fo;
  EXPECT_TRUE(has(from_abi(f, &fo), "fill_blocks: pattern: 9 is not a kvcheck_fill_pattern"));
}

TEST(AbiNames, OpNamesAreKvchecks) {
  const char* want[] = {"write_kv",         "paged_decode", "gather_kv",
                        "varlen_attention", "merge_states", "linear_attention",
                        "fill_blocks",      "quant_fp8",    "paged_prefill"};
  for (int op = 0; op < KVCHECK_NUM_OPS; ++op)
    EXPECT_STREQ(op_name(static_cast<kvcheck_op>(op)), want[op]);
  EXPECT_STREQ(op_name(KVCHECK_NUM_OPS), "unknown");
  EXPECT_EQ(op_names(), std::vector<std::string>(std::begin(want), std::end(want)));
}

TEST(AbiNames, TheOpTableMapsNamesToAbiOpsBothWays) {
  for (int op = 0; op < KVCHECK_NUM_OPS; ++op) {
    const auto abi = static_cast<kvcheck_op>(op);
    EXPECT_EQ(abi_op_from_name(op_name(abi)), abi) << op_name(abi);
    ASSERT_NE(find_abi_op(abi), nullptr);
    EXPECT_EQ(find_abi_op(abi)->role, OpRole::attention_cache);
  }
  // The dense model's ops are kvcheck's names but no ABI op; a name of neither is nothing.
  EXPECT_TRUE(find_device_op("embed"));
  EXPECT_FALSE(abi_op_from_name("embed"));
  EXPECT_FALSE(abi_op_from_name("zero_blocks"));
  EXPECT_EQ(find_abi_op(KVCHECK_NUM_OPS), nullptr);
  EXPECT_EQ(find_abi_op(-1), nullptr);
}

TEST(AbiCaps, ImplementsReadsOnlyWhatStructSizeCovers) {
  kvcheck_backend b{};
  b.struct_size = sizeof(b);
  b.quant_fp8 = [](void*, const kvcheck_quant_fp8_args*, void*, char*, size_t) { return 0; };
  EXPECT_TRUE(implements(b, KVCHECK_OP_QUANT_FP8));
  EXPECT_FALSE(implements(b, KVCHECK_OP_WRITE_KV));
  EXPECT_EQ(implemented_ops(b), std::vector<kvcheck_op>{KVCHECK_OP_QUANT_FP8});
  b.struct_size = offsetof(kvcheck_backend, quant_fp8);  // an older, shorter table
  EXPECT_FALSE(implements(b, KVCHECK_OP_QUANT_FP8));
  EXPECT_TRUE(implemented_ops(b).empty());
}

TEST(AbiCaps, RefusalNamesTheCapability) {
  const int32_t dims[] = {64, 128};
  kvcheck_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.cache_dtypes = KVCHECK_DTYPE_BIT(KVCHECK_BF16) | KVCHECK_DTYPE_BIT(KVCHECK_F32);
  caps.layouts = KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_MLA_LATENT);
  caps.head_dims = dims;
  caps.num_head_dims = 2;
  const CacheShape ok{DType::bf16, KVCHECK_LAYOUT_MLA_LATENT, 128, 7};
  EXPECT_EQ(caps_refusal(caps, ok), "");
  CacheShape c = ok;
  c.dtype = DType::fp8_e4m3;
  EXPECT_EQ(caps_refusal(caps, c), "cache dtype fp8_e4m3 is not among the backend's: f32 bf16");
  c = ok;
  c.layout = KVCHECK_LAYOUT_KV_INTERLEAVED;
  EXPECT_EQ(caps_refusal(caps, c),
            "cache layout kv_interleaved is not among the backend's: mla_latent");
  c = ok;
  c.head_dim = 96;
  EXPECT_EQ(caps_refusal(caps, c), "head_dim 96 is not among the backend's: 64 128");
  // An op that reads rows, not the paged cache (varlen_attention), is not asked for the cache's
  // layout or block size; its dtype and head dim still are.
  const int32_t sizes[] = {16};
  caps.block_sizes = sizes;
  caps.num_block_sizes = 1;
  c = ok;
  c.layout = KVCHECK_LAYOUT_KV_INTERLEAVED;
  EXPECT_TRUE(has(caps_refusal(caps, c), "cache layout kv_interleaved"));
  c.paged = false;
  EXPECT_EQ(caps_refusal(caps, c), "");
  c.head_dim = 96;
  EXPECT_EQ(caps_refusal(caps, c), "head_dim 96 is not among the backend's: 64 128");
  c = ok;
  EXPECT_EQ(caps_refusal(caps, c), "block_size 7 is not among the backend's: 16");
  // GQA ratios: asked of attention layers only (an MLA layer's is 0: not asked).
  const int32_t ratios[] = {1, 2, 4, 8};
  caps.gqa_ratios = ratios;
  caps.num_gqa_ratios = 4;
  c = ok;
  c.block_size = 16;
  c.gqa_ratio = 4;
  EXPECT_EQ(caps_refusal(caps, c), "");
  c.gqa_ratio = 7;
  EXPECT_EQ(caps_refusal(caps, c),
            "GQA ratio 7 (query heads per KV head) is not among the backend's: 1 2 4 8");
  c.gqa_ratio = 0;
  EXPECT_EQ(caps_refusal(caps, c), "");
  // MLA latent rows by (kv_lora_rank, qk_rope_dim) pairs: head_dims is not asked of them.
  const int32_t mla[] = {512, 64};
  caps.mla_dims = mla;
  caps.num_mla_dims = 1;
  c = ok;
  c.block_size = 16;
  c.head_dim = 576;
  c.mla_rope_dim = 64;
  EXPECT_EQ(caps_refusal(caps, c), "");
  c.head_dim = 80;
  c.mla_rope_dim = 16;
  EXPECT_EQ(caps_refusal(caps, c),
            "MLA latent 64+16 (kv_lora_rank + qk_rope_dim) is not among the backend's: 512+64");
  caps.struct_size = 12;
  EXPECT_TRUE(has(caps_refusal(caps, ok), "caps struct_size 12"));
}

}  // namespace
}  // namespace kv::backend
