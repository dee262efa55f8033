// conform_test.cpp — `kvcheck conform` (src/conform): kvcheck's own host ops as a plugin conform
// on every op, the C example (examples/backend-minimal) on its two, and its BROKEN_TAIL mutant
// fails on paged_decode, through the library and through the CLI (exit 0 / 1 / 3). The grid
// follows the caps.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cli/cli_runner.h"
#include "conform/conform.h"
#include "conform/conform_support.h"
#include "plugin/backend_library.h"

namespace kv::conform {
namespace {

constexpr int32_t kCpu = 1;  // kDLCPU

ConformReport conform_library(const char* path) {
  BackendLibrary lib(path, kCpu, 0);
  return run_conform(lib.table(), ConformOptions{});
}

const OpReport* find_op(const ConformReport& r, const std::string& op) {
  for (const OpReport& o : r.ops)
    if (o.op == op) return &o;
  return nullptr;
}

TEST(Conform, HostPluginConformsOnEveryOp) {
  const ConformReport r = conform_library(KVCHECK_HOST_BACKEND);
  EXPECT_TRUE(r.all_passed());
  for (const char* op : {"write_kv", "paged_decode", "gather_kv", "varlen_attention",
                         "merge_states", "linear_attention", "fill_blocks", "quant_fp8"}) {
    const OpReport* o = find_op(r, op);
    ASSERT_NE(o, nullptr) << op;
    EXPECT_TRUE(o->covered) << op;
    EXPECT_GT(o->cases, 10) << op;
    EXPECT_EQ(o->passed, o->cases) << op << ": " << o->first_failure;
    EXPECT_EQ(o->worst_error, 0.0) << op << ": the same code on both sides";
  }
}

TEST(Conform, MinimalExampleConformsOnItsTwoOps) {
  const ConformReport r = conform_library(KVCHECK_MINIMAL_BACKEND);
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_EQ(r.ops[0].op, "write_kv");
  EXPECT_EQ(r.ops[1].op, "paged_decode");
  for (const OpReport& o : r.ops) {
    EXPECT_GT(o.cases, 100) << o.op;
    EXPECT_TRUE(o.ok()) << o.op << ": " << o.first_failure;
  }
  EXPECT_EQ(r.ops[0].worst_error, 0.0);  // write_kv rounds as kvcheck does, bit for bit
  EXPECT_GT(r.ops[1].worst_error, 0.0);  // one pass vs split-KV: a few ulps apart
  EXPECT_LT(r.ops[1].worst_error, 1e-5);
}

TEST(Conform, BrokenTailFailsOnPagedDecodeOnly) {
  const ConformReport r = conform_library(KVCHECK_MINIMAL_BROKEN_BACKEND);
  EXPECT_FALSE(r.all_passed());
  ASSERT_NE(find_op(r, "write_kv"), nullptr);
  EXPECT_TRUE(find_op(r, "write_kv")->ok());
  const OpReport* d = find_op(r, "paged_decode");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->passed, 0);  // every case has a row whose last token it drops
  EXPECT_NE(d->first_failure.find("out rel err"), std::string::npos) << d->first_failure;
}

// bf16 q/out, base-2 lse with +inf for empty rows, padded rows (1, -1): conform hands the plugin
// bf16 rows and reads its lse in its base, so it conforms within the bf16 rounding of out; the
// twin that declares base 2 but writes natural logs fails on every op that writes an lse.
TEST(Conform, APluginOfOtherConventionsConformsWithinItsIoRounding) {
  const ConformReport r = conform_library(KVTEST_CONVENTIONS);
  EXPECT_TRUE(r.all_passed());
  for (const char* op : {"paged_decode", "varlen_attention", "merge_states"}) {
    const OpReport* o = find_op(r, op);
    ASSERT_NE(o, nullptr) << op;
    EXPECT_TRUE(o->covered) << op;
    EXPECT_EQ(o->passed, o->cases) << op << ": " << o->first_failure;
    EXPECT_GT(o->worst_error, 1e-4) << op << ": bf16 outputs must differ from f32 ones";
    EXPECT_LE(o->worst_error, 1e-5 + 1.0 / 256) << op;
  }
}

TEST(Conform, APluginThatLiesAboutItsLseBaseFailsWhereItWritesOne) {
  const ConformReport r = conform_library(KVTEST_CONVENTIONS_LIE);
  for (const char* op : {"paged_decode", "varlen_attention", "merge_states"}) {
    const OpReport* o = find_op(r, op);
    ASSERT_NE(o, nullptr) << op;
    EXPECT_FALSE(o->ok()) << op;
    EXPECT_NE(o->first_failure.find("lse"), std::string::npos) << op << ": " << o->first_failure;
  }
  EXPECT_TRUE(find_op(r, "write_kv")->ok());
}

// A backend whose op returns an error: a failing case carrying its message.
int32_t failing_write_kv(void*, const kvcheck_write_kv_args*, void*, char* err, size_t n) {
  snprintf(err, n, "write_kv: nope");
  return KVCHECK_ERROR;
}

TEST(Conform, AnErrorStatusFailsTheCaseWithItsMessage) {
  kvcheck_backend b{};
  b.struct_size = sizeof(b);
  b.name = "failing";
  b.version = "0";
  b.caps.struct_size = sizeof(b.caps);
  b.caps.cache_dtypes = KVCHECK_DTYPE_BIT(KVCHECK_F32);
  b.caps.layouts = KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_KV_SEPARATE);
  b.write_kv = failing_write_kv;
  const ConformReport r = run_conform(b, ConformOptions{});
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].passed, 0);
  EXPECT_NE(r.ops[0].first_failure.find("write_kv: nope"), std::string::npos);
}

TEST(Conform, TheGridFollowsTheCaps) {
  kvcheck_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.cache_dtypes = KVCHECK_DTYPE_BIT(KVCHECK_BF16) | KVCHECK_DTYPE_BIT(KVCHECK_F16);
  caps.layouts = KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_KV_INTERLEAVED);
  const int32_t block_sizes[] = {16, 32}, head_dims[] = {128};
  caps.block_sizes = block_sizes;
  caps.num_block_sizes = 2;
  caps.head_dims = head_dims;
  caps.num_head_dims = 1;
  std::string note;
  const auto grid = cache_grid(caps, &note);
  // bf16 (f16 is not in the grid), interleaved, head_dim 128; block size 16 (kvcheck's pick the
  // caps take) and 32 (the caps' own, tested too).
  ASSERT_EQ(grid.size(), 2u);
  for (const CacheCase& c : grid) {
    EXPECT_EQ(c.dtype, DType::bf16);
    EXPECT_EQ(c.layout, KVCHECK_LAYOUT_KV_INTERLEAVED);
    EXPECT_EQ(c.head_dim, 128);
  }
  EXPECT_EQ(grid[0].block_size, 16);
  EXPECT_EQ(grid[1].block_size, 32);
  // MLA latent rows come from the caps' (kv_lora_rank, qk_rope_dim) pairs.
  const int32_t mla[] = {512, 64};
  caps.layouts = KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_MLA_LATENT);
  caps.mla_dims = mla;
  caps.num_mla_dims = 1;
  for (const CacheCase& c : cache_grid(caps, nullptr)) {
    EXPECT_EQ(c.head_dim, 576);
    EXPECT_EQ(c.v_dim(), 512);
  }
  caps.cache_dtypes = KVCHECK_DTYPE_BIT(KVCHECK_F32);
  caps.block_sizes = nullptr;
  caps.head_dims = nullptr;
  std::set<int32_t> sizes;
  for (const CacheCase& c : cache_grid(caps, nullptr)) sizes.insert(c.block_size);
  EXPECT_EQ(sizes, (std::set<int32_t>{1, 3, 7, 16}));
}

// ---- the CLI ----

class ConformCli : public kv::test::CliTest {};

TEST_F(ConformCli, ExitsZeroWithATableWhenEveryOpConforms) {
  const auto r = kvcheck(std::string("conform --backend '") + KVCHECK_MINIMAL_BACKEND + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(kv::test::contains(r.out, "worst err")) << r.out;
  EXPECT_TRUE(kv::test::contains(r.out, "paged_decode")) << r.out;
  EXPECT_TRUE(kv::test::contains(r.out, "every op conforms")) << r.out;
}

TEST_F(ConformCli, ExitsOneNamingTheFailingOp) {
  const auto r =
      kvcheck(std::string("conform --backend '") + KVCHECK_MINIMAL_BROKEN_BACKEND + "' --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(kv::test::contains(r.out, "\"kvcheck.conform/1\"")) << r.out;
  EXPECT_TRUE(kv::test::contains(r.out, "\"op\": \"paged_decode\"")) << r.out;
  EXPECT_TRUE(kv::test::contains(r.out, "\"passed\": false")) << r.out;
}

TEST_F(ConformCli, ExitsThreeWhenThePluginCannotBeLoaded) {
  const auto r = kvcheck("conform --backend no-such-plugin.so");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(kv::test::contains(r.err, "no-such-plugin.so")) << r.err;
}

}  // namespace
}  // namespace kv::conform
