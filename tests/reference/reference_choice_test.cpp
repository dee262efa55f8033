// reference_choice_test.cpp — where the reference runs and in which mode, decided from the room
// next to the engine (reference/reference_choice.h): auto follows the run's device, a full GPU
// reference that fits is taken, one that does not is sampled (auto) or refused (asked for), a
// sampled one that does not fit is refused, and the room is asked only for a GPU reference.
#include <gtest/gtest.h>

#include "reference/cuda_layout.h"
#include "reference/reference_choice.h"

namespace kv {
namespace {

Scenario small() {
  Scenario s;
  s.name = "small";
  s.checks.sampled_requests = 2;
  return s;
}

TEST(ReferencePlan, AutoFollowsTheRunsDevice) {
  EXPECT_FALSE(reference_on_gpu(ReferenceRequest::automatic, false));
  EXPECT_TRUE(reference_on_gpu(ReferenceRequest::automatic, true));
  EXPECT_FALSE(reference_on_gpu(ReferenceRequest::host, true));
  EXPECT_TRUE(reference_on_gpu(ReferenceRequest::cuda, false));
  EXPECT_TRUE(reference_on_gpu(ReferenceRequest::both, false));
}

TEST(ReferencePlan, TheHostReferenceNeverAsksForRoom) {
  Scenario s = small();
  s.checks.reference = ReferenceMode::automatic;
  const ReferencePlan p = plan_reference(s, ReferenceRequest::host, true, []() -> int64_t {
    ADD_FAILURE() << "room asked for a host reference";
    return 0;
  });
  EXPECT_EQ(p.device, ReferenceDevice::host);
  EXPECT_EQ(s.checks.reference, ReferenceMode::sampled);
  EXPECT_TRUE(p.refusal.empty());
}

TEST(ReferencePlan, AFullGpuReferenceThatFitsIsTaken) {
  Scenario s = small();
  s.checks.reference = ReferenceMode::automatic;
  const int64_t full = cuda_reference_bytes(s, ReferenceMode::full);
  const ReferencePlan p =
      plan_reference(s, ReferenceRequest::cuda, false, [&] { return full + 1000; });
  EXPECT_EQ(p.device, ReferenceDevice::cuda);
  EXPECT_EQ(s.checks.reference, ReferenceMode::full);
  EXPECT_FALSE(p.fell_back);
  EXPECT_EQ(p.keep_bytes, 500);  // half of what is left
  EXPECT_NE(p.mode_reason.find("fits"), std::string::npos) << p.mode_reason;
}

TEST(ReferencePlan, AutoFallsBackToSampledWhenFullDoesNotFit) {
  Scenario s = small();
  s.checks.reference = ReferenceMode::automatic;
  const int64_t full = cuda_reference_bytes(s, ReferenceMode::full);
  const int64_t sampled = cuda_reference_bytes(s, ReferenceMode::sampled);
  ASSERT_LT(sampled, full);
  const ReferencePlan p = plan_reference(s, ReferenceRequest::both, false, [&] { return full - 1; });
  EXPECT_EQ(s.checks.reference, ReferenceMode::sampled);
  EXPECT_TRUE(p.crosscheck);
  EXPECT_TRUE(p.refusal.empty()) << p.refusal;
  EXPECT_EQ(p.keep_bytes, (full - 1 - sampled) / 2);
}

TEST(ReferencePlan, AFullReferenceAskedForThatDoesNotFitIsRefused) {
  Scenario s = small();
  s.checks.reference = ReferenceMode::full;
  const int64_t full = cuda_reference_bytes(s, ReferenceMode::full);
  const ReferencePlan p = plan_reference(s, ReferenceRequest::cuda, false, [&] { return full - 1; });
  EXPECT_NE(p.refusal.find("checks.reference \"full\""), std::string::npos) << p.refusal;
  EXPECT_EQ(s.checks.reference, ReferenceMode::full);  // never silently replaced
}

TEST(ReferencePlan, ASampledReferenceThatDoesNotFitIsRefused) {
  Scenario s = small();
  s.checks.reference = ReferenceMode::automatic;
  const ReferencePlan p = plan_reference(s, ReferenceRequest::cuda, true, [] { return 0; });
  EXPECT_NE(p.refusal.find("even the sampled GPU reference"), std::string::npos) << p.refusal;
}

}  // namespace
}  // namespace kv
