// poll.cpp — PollScope and poll_point: the calling thread's poll and its work counter.
#include "kernels/host/poll.h"

#include <utility>

namespace kv::host {
namespace {

thread_local const Poll* t_poll = nullptr;  // the innermost scope's poll, or none
thread_local int64_t t_work = 0;            // units since the poll was last called

}  // namespace

PollScope::PollScope(Poll poll) : poll_(std::move(poll)), outer_(t_poll) {
  if (!poll_) return;
  t_poll = &poll_;
  t_work = 0;  // a fresh count: what ran before the scope is no work of its
}

PollScope::~PollScope() { t_poll = outer_; }

void poll_point(int64_t work) {
  if (t_poll == nullptr) return;
  t_work += work;
  if (t_work < kPollWork) return;
  t_work = 0;
  (*t_poll)();
}

}  // namespace kv::host
