// mechanisms_test.cpp — the mechanism table is indexed by the enum with unique names, and every
// regression declares at least one mechanism it needs.
#include "scenario/mechanisms.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "scenario/regressions.h"

namespace kv {
namespace {

TEST(Mechanisms, TableIsIndexedByTheEnumWithUniqueNames) {
  std::set<std::string> names;
  size_t index = 0;
  for (const MechanismInfo& m : all_mechanisms()) {
    EXPECT_EQ(static_cast<size_t>(m.id), index++) << m.name;
    EXPECT_EQ(&mechanism_info(m.id), &m);
    EXPECT_TRUE(names.insert(std::string(m.name)).second) << m.name;
    EXPECT_FALSE(m.counts.empty()) << m.name;
    EXPECT_FALSE(m.needs.empty()) << m.name;
  }
  EXPECT_EQ(index, kNumMechanisms);
}

TEST(Mechanisms, EveryRegressionNeedsOneOrMore) {
  for (const RegressionInfo& r : all_regressions()) {
    EXPECT_FALSE(r.needs.empty()) << r.name;
    for (Mechanism m : r.needs) EXPECT_LT(static_cast<size_t>(m), kNumMechanisms) << r.name;
  }
  EXPECT_EQ(regression_info(Regression::new_blocks_not_zeroed).needs,
            std::vector<Mechanism>{Mechanism::blocks_recycled});
}

}  // namespace
}  // namespace kv
