// regressions_test.cpp — the registry is indexed by the enum, and a RegressionSet is a set.
#include "scenario/regressions.h"

#include <gtest/gtest.h>

namespace kv {
namespace {

TEST(Regressions, RegistryIsInEnumOrderWithUniqueNames) {
  ASSERT_EQ(all_regressions().size(), kNumRegressions);
  for (size_t i = 0; i < kNumRegressions; ++i) {
    const Regression r = static_cast<Regression>(i);
    EXPECT_EQ(all_regressions()[i].id, r);
    EXPECT_EQ(regression_info(r).id, r);
    EXPECT_EQ(find_regression(regression_info(r).name), &regression_info(r));
  }
  EXPECT_EQ(find_regression("no-such-regression"), nullptr);
}

TEST(Regressions, SetHoldsEachOnceAndNamesInRegistryOrder) {
  RegressionSet s;
  EXPECT_TRUE(s.empty());
  s.add(Regression::gather_assumes_contiguous);
  s.add(Regression::merge_ignores_context_count);
  s.add(Regression::gather_assumes_contiguous);
  EXPECT_EQ(s.size(), 2u);
  EXPECT_TRUE(s.has(Regression::merge_ignores_context_count));
  EXPECT_FALSE(s.has(Regression::new_blocks_not_zeroed));
  EXPECT_EQ(s.names(), (std::vector<std::string>{"merge-ignores-context-count",
                                                 "gather-assumes-contiguous"}));
}

}  // namespace
}  // namespace kv
