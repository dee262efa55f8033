// test_workload.cpp — make_workload: determinism, ranges, shared prefixes, a pinned draw order.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <vector>

#include "engine/workload.h"

namespace kv {
namespace {

WorkloadSpec spec(int32_t n, int32_t groups, int32_t shared) {
  WorkloadSpec w;
  w.num_requests = n;
  w.prompt_len = {5, 29};
  w.new_tokens = {1, 9};
  w.arrival_step = {2, 11};
  w.prefix_groups = groups;
  w.shared_prefix_len = shared;
  return w;
}

bool same(const std::vector<Request>& a, const std::vector<Request>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].prompt != b[i].prompt ||
        a[i].max_new_tokens != b[i].max_new_tokens || a[i].arrival_step != b[i].arrival_step) {
      return false;
    }
  }
  return true;
}

TEST(Workload, SameSeedSameRequestsOtherSeedOtherRequests) {
  const auto w = spec(20, 3, 4);
  EXPECT_TRUE(same(make_workload(w, 5, 100), make_workload(w, 5, 100)));
  EXPECT_FALSE(same(make_workload(w, 5, 100), make_workload(w, 6, 100)));
}

TEST(Workload, DrawsStayInTheirRanges) {
  const auto w = spec(300, 0, 0);
  const auto rs = make_workload(w, 11, 37);
  ASSERT_EQ(rs.size(), 300u);
  std::set<int32_t> lens, news, arrivals, tokens;
  for (int32_t i = 0; i < 300; ++i) {
    const Request& r = rs[i];
    EXPECT_EQ(r.id, i);
    EXPECT_EQ(r.status, RequestStatus::waiting);
    EXPECT_TRUE(r.output.empty());
    lens.insert(static_cast<int32_t>(r.prompt.size()));
    news.insert(r.max_new_tokens);
    arrivals.insert(r.arrival_step);
    tokens.insert(r.prompt.begin(), r.prompt.end());
  }
  // Every value of each range is drawn, and nothing outside it (a set of 300 draws over ranges
  // of at most 37 values misses one with negligible probability).
  EXPECT_EQ(*lens.begin(), 5);
  EXPECT_EQ(*lens.rbegin(), 29);
  EXPECT_EQ(lens.size(), 25u);
  EXPECT_EQ(news, (std::set<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(*arrivals.begin(), 2);
  EXPECT_EQ(*arrivals.rbegin(), 11);
  EXPECT_EQ(arrivals.size(), 10u);
  EXPECT_EQ(*tokens.begin(), 0);
  EXPECT_EQ(*tokens.rbegin(), 36);
  EXPECT_EQ(tokens.size(), 37u);
}

TEST(Workload, GroupMembersShareTheirPrefix) {
  const int32_t groups = 3, shared = 5;
  const auto rs = make_workload(spec(12, groups, shared), 3, 1000);
  for (int32_t i = 0; i < 12; ++i) {
    const auto& first = rs[i % groups].prompt;
    const auto& mine = rs[i].prompt;
    EXPECT_TRUE(std::equal(first.begin(), first.begin() + shared, mine.begin())) << i;
    if (i >= groups) {  // beyond the prefix, members differ (vocab 1000: a clash is unlikely)
      EXPECT_NE(std::vector<int32_t>(first.begin() + shared, first.end()),
                std::vector<int32_t>(mine.begin() + shared, mine.end()));
    }
  }
  for (int32_t g = 1; g < groups; ++g) {
    EXPECT_NE(std::vector<int32_t>(rs[0].prompt.begin(), rs[0].prompt.begin() + shared),
              std::vector<int32_t>(rs[g].prompt.begin(), rs[g].prompt.begin() + shared));
  }
}

TEST(Workload, NoGroupsNoSharing) {
  const auto rs = make_workload(spec(6, 0, 5), 3, 1000);
  for (int32_t i = 1; i < 6; ++i) {
    EXPECT_NE(std::vector<int32_t>(rs[0].prompt.begin(), rs[0].prompt.begin() + 5),
              std::vector<int32_t>(rs[i].prompt.begin(), rs[i].prompt.begin() + 5));
  }
}

TEST(Workload, PrefixLongerThanAPromptIsCutToThePrompt) {
  WorkloadSpec w = spec(4, 1, 50);
  w.prompt_len = {3, 8};
  const auto rs = make_workload(w, 9, 500);
  for (const auto& r : rs) {
    const auto& p = rs[0].prompt;
    const size_t n = std::min(r.prompt.size(), p.size());
    EXPECT_TRUE(std::equal(r.prompt.begin(), r.prompt.begin() + n, p.begin()));
  }
}

TEST(Workload, RejectsBadSpecs) {
  WorkloadSpec w = spec(4, 0, 0);
  EXPECT_THROW(make_workload(w, 1, 0), std::invalid_argument);
  w.prompt_len = {9, 3};
  EXPECT_THROW(make_workload(w, 1, 10), std::invalid_argument);
  w = spec(4, 0, 0);
  w.new_tokens = {0, 3};
  EXPECT_THROW(make_workload(w, 1, 10), std::invalid_argument);
}

// The draw order is part of the scenario format: a scenario must mean the same requests on every
// platform and in every version. If this changes on purpose, every scenario's workload changed.
TEST(Workload, PinnedDraws) {
  const auto rs = make_workload(spec(3, 2, 3), 42, 128);
  std::vector<int32_t> got;
  for (const auto& r : rs) {
    got.push_back(static_cast<int32_t>(r.prompt.size()));
    got.push_back(r.max_new_tokens);
    got.push_back(r.arrival_step);
    got.insert(got.end(), r.prompt.begin(), r.prompt.begin() + 5);
  }
  const std::vector<int32_t> pinned = {23, 6, 9, 34, 15, 2, 106, 35, 29, 6, 4, 75, 59, 111,
                                       117, 121, 21, 1, 8, 34, 15, 2, 19, 44};
  EXPECT_EQ(got, pinned);
}

}  // namespace
}  // namespace kv
