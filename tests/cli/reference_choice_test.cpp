// reference_choice_test.cpp — --reference-device and checks.reference "auto" resolved
// (cli/reference_choice.h): on the host reference "auto" is sampled with its reason, full and
// sampled stay as given, and a GPU reference that cannot be had is refused (exit 3's error),
// never silently replaced by the host's.
#include <gtest/gtest.h>

#include "cli/device_factory.h"
#include "cli/reference_choice.h"
#include "device/host_device.h"

namespace kv::cli {
namespace {

TEST(ReferenceChoice, AutoOnTheHostReferenceIsSampledWithItsReason) {
  Scenario s;
  s.checks.reference = ReferenceMode::automatic;
  s.checks.sampled_requests = 3;
  HostDevice host;
  const ReferenceSetup r = choose_reference(s, ReferenceRequest::automatic, host, std::nullopt);
  EXPECT_EQ(s.checks.reference, ReferenceMode::sampled);
  EXPECT_EQ(s.checks.sampled_requests, 3);
  EXPECT_EQ(r.device, ReferenceDevice::host);
  EXPECT_FALSE(r.make);  // the CPU reference
  EXPECT_NE(r.mode_reason.find("host"), std::string::npos) << r.mode_reason;
}

TEST(ReferenceChoice, FullAndSampledStayAsGiven) {
  HostDevice host;
  for (ReferenceMode m : {ReferenceMode::full, ReferenceMode::sampled}) {
    Scenario s;
    s.checks.reference = m;
    const ReferenceSetup r = choose_reference(s, ReferenceRequest::host, host, std::nullopt);
    EXPECT_EQ(s.checks.reference, m);
    EXPECT_EQ(r.device, ReferenceDevice::host);
    EXPECT_TRUE(r.mode_reason.empty());
  }
}

TEST(ReferenceChoice, AGpuReferenceThatCannotBeHadIsRefused) {
  if (cuda_device_available()) GTEST_SKIP() << "a GPU is visible here";
  HostDevice host;
  for (ReferenceRequest asked : {ReferenceRequest::cuda, ReferenceRequest::both}) {
    Scenario s;
    try {
      choose_reference(s, asked, host, std::nullopt);
      FAIL() << "request " << static_cast<int>(asked) << " was not refused";
    } catch (const DeviceUnavailable& e) {
      EXPECT_NE(std::string(e.what()).find("--reference-device"), std::string::npos) << e.what();
    }
  }
}

TEST(ReferenceChoice, TheOptionTakesTheTablesNames) {
  EXPECT_EQ(enum_names(kReferenceRequestNames),
            (std::vector<std::string>{"host", "cuda", "auto", "both"}));
}

}  // namespace
}  // namespace kv::cli
