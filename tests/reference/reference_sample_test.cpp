// reference_sample_test.cpp — the seeded sample of the sampled reference mode: deterministic,
// exactly n distinct valid ids, the n smallest keys, different per epoch and seed, everything
// when n covers the epoch.
#include "reference/reference_sample.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace kv {
namespace {

TEST(ReferenceSample, DeterministicAscendingDistinctAndInRange) {
  const auto a = sample_requests(11, 2, 200, 8);
  EXPECT_EQ(a, sample_requests(11, 2, 200, 8));
  ASSERT_EQ(a.size(), 8u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<int32_t>(a.begin(), a.end()).size(), 8u);
  for (int32_t id : a) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 200);
  }
}

TEST(ReferenceSample, IsTheRequestsWithTheSmallestKeys) {
  for (int32_t n : {1, 3, 17, 99}) {
    const auto sample = sample_requests(5, 1, 100, n);
    ASSERT_EQ(sample.size(), static_cast<size_t>(n));
    uint64_t largest_in = 0;
    for (int32_t id : sample) largest_in = std::max(largest_in, sample_key(5, 1, id));
    for (int32_t id = 0; id < 100; ++id) {
      if (std::binary_search(sample.begin(), sample.end(), id)) continue;
      EXPECT_GT(sample_key(5, 1, id), largest_in) << "request " << id << " should be in";
    }
  }
}

TEST(ReferenceSample, DiffersBetweenEpochsAndSeeds) {
  const auto base = sample_requests(11, 1, 200, 8);
  EXPECT_NE(base, sample_requests(11, 2, 200, 8));
  EXPECT_NE(base, sample_requests(12, 1, 200, 8));
  // Over many epochs the samples cover most of the workload, not the same few requests.
  std::set<int32_t> seen;
  for (int32_t epoch = 1; epoch <= 20; ++epoch)
    for (int32_t id : sample_requests(11, epoch, 40, 4)) seen.insert(id);
  EXPECT_GT(seen.size(), 30u);
}

TEST(ReferenceSample, EveryRequestWhenTheSampleCoversTheEpoch) {
  const std::vector<int32_t> all = {0, 1, 2, 3, 4};
  EXPECT_EQ(sample_requests(3, 1, 5, 5), all);
  EXPECT_EQ(sample_requests(3, 1, 5, 8), all);
  EXPECT_EQ(sample_requests(3, 7, 1, 1), std::vector<int32_t>{0});
}

TEST(ReferenceSample, KeysDependOnEveryInput) {
  const uint64_t k = sample_key(1, 1, 1);
  EXPECT_NE(k, sample_key(2, 1, 1));
  EXPECT_NE(k, sample_key(1, 2, 1));
  EXPECT_NE(k, sample_key(1, 1, 2));
  EXPECT_NE(sample_key(0, 1, 2), sample_key(0, 2, 1)) << "epoch and id are not interchangeable";
}

}  // namespace
}  // namespace kv
