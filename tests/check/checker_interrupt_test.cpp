// checker_interrupt_test.cpp — Checker::set_interrupt: called before every reference position,
// from the reference's worker threads too, and what it throws ends the step (--max-seconds).
#include <atomic>
#include <stdexcept>

#include "checker_fixture.h"

namespace kv::test {
namespace {

TEST(CheckerInterrupt, IsCalledOncePerReferencePosition) {
  Fixture f;
  int64_t positions = 0;
  for (const ScheduledChunk& c : f.plan.chunks) positions += c.num_tokens;
  for (unsigned workers : {1u, 4u}) {
    Checker chk(f.s, f.w, workers);
    std::atomic<int64_t> calls{0};
    chk.set_interrupt([&] { ++calls; });
    chk.begin_epoch(1, 3);
    chk.check_step(0, f.plan, f.outputs, f.sched);
    EXPECT_EQ(calls.load(), positions) << workers << " workers";
    EXPECT_FALSE(chk.first_failure()) << "interrupting nothing changes nothing";
  }
}

TEST(CheckerInterrupt, WhatItThrowsEndsTheStep) {
  Fixture f;
  for (unsigned workers : {1u, 4u}) {
    Checker chk(f.s, f.w, workers);
    std::atomic<int> calls{0};
    chk.set_interrupt([&] {
      if (++calls > 2) throw std::runtime_error("time is up");
    });
    chk.begin_epoch(1, 3);
    EXPECT_THROW(chk.check_step(0, f.plan, f.outputs, f.sched), std::runtime_error);
  }
}

}  // namespace
}  // namespace kv::test
