// test_device_capacity.cpp — a scenario whose KV cache does not fit the device is refused before
// anything is allocated, with a message that says how much it needs and what to change.
#include <gtest/gtest.h>

#include "device/host_device.h"
#include "engine/engine.h"

namespace kv {
namespace {

// A host device that claims to have only `free` bytes left, as a GPU reports.
class SmallDevice : public HostDevice {
 public:
  explicit SmallDevice(size_t free) : free_(free) {}
  std::optional<size_t> free_bytes() const override { return free_; }

 private:
  size_t free_;
};

TEST(DeviceCapacity, ACacheLargerThanTheFreeMemoryIsRefusedBeforeAllocation) {
  Scenario s;
  s.cache.num_blocks = 4096;  // 2 layers x 2 x 4096 x 16 x 2 x 16 x 2 bytes = 16 MiB
  SmallDevice small(1 << 20);
  try {
    Engine e(s, small);
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("lower cache.num_blocks"), std::string::npos) << what;
    EXPECT_NE(what.find("4096 blocks"), std::string::npos) << what;
  }
  EXPECT_EQ(small.live_buffers(), 0u) << "nothing may stay allocated";
  SmallDevice roomy(size_t{1} << 30);
  EXPECT_NO_THROW(Engine(s, roomy));
}

}  // namespace
}  // namespace kv
