// regressions_test.cpp — the registry is indexed by the enum, and a RegressionSet is a set.
#include "scenario/regressions.h"

#include <gtest/gtest.h>

namespace kv {
namespace {

TEST(Regressions, RegistryIsIndexedByTheEnum) {
  size_t index = 0;
  for (const RegressionInfo& info : all_regressions()) {
    EXPECT_EQ(static_cast<size_t>(info.id), index++) << info.name;
    EXPECT_EQ(&regression_info(info.id), &info);
    EXPECT_EQ(find_regression(info.name), &info) << "names must be unique";
  }
  EXPECT_EQ(index, kNumRegressions);
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
