// poll.h — how a caller ends a long host op mid-way (--max-seconds): it installs a poll for its
// thread (PollScope), and the ops whose work grows with a step — attention, decode, merge, the
// dense linear, fp8, conversions, pattern fills — call poll_point() between small units of work
// (a query row's head, a decode tile, a row, a megabyte).
// Every kPollWork units of work (about multiply-adds or bytes: a few milliseconds on one core)
// poll_point() calls the poll, which may throw; the op then ends with its outputs partly written,
// and its caller abandons them.
//
// Per thread, so that the ops' signatures (shared with the CUDA kernels and the plugins that run
// them) stay as they are. Without a scope poll_point() only adds to a counter; a poll never
// changes what an op computes.
#pragma once

#include <cstdint>
#include <functional>

namespace kv::host {

using Poll = std::function<void()>;

// Work between two calls of the poll: 2^22 multiply-adds, 2-5 ms of a host op on one core.
inline constexpr int64_t kPollWork = int64_t{1} << 22;

// Installs `poll` for the host ops run on the calling thread until destroyed; scopes nest (the
// inner one wins). An empty poll installs none: the enclosing scope's, if any, stays.
class PollScope {
 public:
  explicit PollScope(Poll poll);
  ~PollScope();
  PollScope(const PollScope&) = delete;
  PollScope& operator=(const PollScope&) = delete;

 private:
  Poll poll_;
  const Poll* outer_;
};

// Counts `work` units about to be done and calls the thread's poll, if any, once kPollWork of them
// have passed since its last call. May throw whatever the poll throws.
void poll_point(int64_t work);

}  // namespace kv::host
