// check_sites_test.cpp — the two vocabularies: ops and check sites, each name once, linked.
#include "result/check_sites.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace kv {
namespace {

TEST(DeviceOps, TableIsInEnumOrderWithUniqueNames) {
  ASSERT_EQ(all_device_ops().size(), kNumDeviceOps);
  for (size_t i = 0; i < kNumDeviceOps; ++i) {
    const DeviceOp op = static_cast<DeviceOp>(i);
    EXPECT_EQ(all_device_ops()[i].op, op);
    EXPECT_EQ(find_device_op(op_name(op)), op);
  }
  EXPECT_FALSE(find_device_op("zero_blocks"));
}

TEST(CheckSites, TableIsInEnumOrderAndNoSiteSharesANameWithAnOp) {
  ASSERT_EQ(all_check_sites().size(), kNumCheckSites);
  std::set<std::string> names;
  for (const auto& o : all_device_ops()) names.emplace(o.name);
  for (size_t i = 0; i < kNumCheckSites; ++i) {
    const CheckSite site = static_cast<CheckSite>(i);
    EXPECT_EQ(all_check_sites()[i].site, site);
    EXPECT_EQ(find_check_site(site_name(site)), site);
    EXPECT_TRUE(names.emplace(site_name(site)).second) << site_name(site) << " is used twice";
    EXPECT_FALSE(site_info(site).ops.empty()) << site_name(site);
  }
}

TEST(CheckSites, EveryAttentionCacheOpIsBehindSomeSite) {
  std::set<DeviceOp> covered;
  for (const auto& s : all_check_sites()) covered.insert(s.ops.begin(), s.ops.end());
  for (const auto& o : all_device_ops()) {
    if (o.role == OpRole::attention_cache) {
      EXPECT_TRUE(covered.count(o.op)) << o.name;
    }
  }
}

TEST(CheckSites, MixerRowsMapToTheirSite) {
  EXPECT_EQ(mixer_site(LayerKind::attention, true, false), CheckSite::decode);
  EXPECT_EQ(mixer_site(LayerKind::attention, false, false), CheckSite::prefill);
  EXPECT_EQ(mixer_site(LayerKind::attention, false, true), CheckSite::prefill_with_context);
  EXPECT_EQ(mixer_site(LayerKind::mla, true, false), CheckSite::mla_decode);
  EXPECT_EQ(mixer_site(LayerKind::mla, false, false), CheckSite::mla_prefill);
  EXPECT_EQ(mixer_site(LayerKind::mla, false, true), CheckSite::mla_prefill_with_context);
  EXPECT_EQ(mixer_site(LayerKind::linear, false, true), CheckSite::linear_attention_output);
  // The merge is behind exactly the prefill sites.
  for (const auto& s : all_check_sites()) {
    const bool merges = std::count(s.ops.begin(), s.ops.end(), DeviceOp::merge_states) > 0;
    const bool prefill = s.name.find("prefill") != std::string_view::npos;
    EXPECT_EQ(merges, prefill) << s.name;
  }
}

}  // namespace
}  // namespace kv
