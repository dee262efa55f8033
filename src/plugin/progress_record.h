// progress_record.h — where a run with a backend plugin is, in memory that the parent kvcheck
// process shares with the worker that runs the scenario (plugin/worker.h). The worker's
// BackendDevice marks each plugin call's start and return, the harness the epoch and step; the
// parent reads it to name the op, epoch and step of a crash, an exit or a hang, and to see how
// long the current call has been running (its hang watchdog).
//
// Plain data of lock-free atomics, so it works across processes (an anonymous MAP_SHARED
// mapping made before fork); the op name is written before calls_started moves (release) and
// read by the parent only once the worker is dead or stuck in that call.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

namespace kv {

inline int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // system-wide: comparable between the two processes
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct ProgressRecord {
  static_assert(std::atomic<int64_t>::is_always_lock_free);

  std::atomic<int32_t> epoch{0};  // 1-based; 0 while setting up (weights, warm-up, graphs)
  std::atomic<int64_t> step{0};   // the step running within the epoch, 0-based
  std::atomic<int32_t> layer{-1};  // the model layer of the latest backend call; -1: none
  std::atomic<int64_t> calls_started{0};
  std::atomic<int64_t> calls_returned{0};
  std::atomic<int64_t> call_started_ns{0};  // monotonic_ns() at the latest call's start
  char op[40] = {};      // the latest backend call's op (a synchronisation after it counts too)
  char layer_kind[16] = {};  // the kind of `layer` ("attention", "mla", "linear"), "" for none
  char device[40] = {};  // the device the worker made ("host", "cuda"), once it has

  void set_step(int32_t e, int64_t s) {
    epoch.store(e, std::memory_order_relaxed);
    step.store(s, std::memory_order_release);
  }
  // The layer (kind) the next calls belong to; written before the call's start is published.
  void set_layer(int32_t l, const char* kind) {
    std::strncpy(layer_kind, kind ? kind : "", sizeof(layer_kind) - 1);
    layer.store(l, std::memory_order_relaxed);
  }
  void begin_call(const char* name) {
    std::strncpy(op, name, sizeof(op) - 1);
    call_started_ns.store(monotonic_ns(), std::memory_order_relaxed);
    calls_started.fetch_add(1, std::memory_order_release);
  }
  void end_call() { calls_returned.fetch_add(1, std::memory_order_release); }

  // A call has started and not returned (the worker is inside the plugin, or synchronising after
  // it under --backend-sync).
  bool in_call() const {
    return calls_started.load(std::memory_order_acquire) >
           calls_returned.load(std::memory_order_acquire);
  }
  // Seconds the current call has run; 0 when none runs.
  double call_seconds() const {
    return in_call() ? 1e-9 * static_cast<double>(monotonic_ns() - call_started_ns.load()) : 0.0;
  }
  std::string op_name() const { return std::string(op, strnlen(op, sizeof(op))); }
  std::string layer_kind_name() const {
    return std::string(layer_kind, strnlen(layer_kind, sizeof(layer_kind)));
  }
};

// Marks one call's start and return on a record (none: nothing), also when the call throws.
class CallMark {
 public:
  CallMark(ProgressRecord* record, const char* name) : record_(record) {
    if (record_) record_->begin_call(name);
  }
  ~CallMark() {
    if (record_) record_->end_call();
  }
  CallMark(const CallMark&) = delete;
  CallMark& operator=(const CallMark&) = delete;

 private:
  ProgressRecord* record_;
};

}  // namespace kv
