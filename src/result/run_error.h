// run_error.h — why a run with a backend plugin ended in an error verdict, and where. Plain data.
#pragma once

#include <cstdint>
#include <string>

namespace kv {

// How the code under test failed: it crashed (a signal), exited the process, returned an error
// status, or hung past --backend-timeout.
// timeout: the scenario ran past --timeout-per-scenario (with or without a backend).
enum class RunErrorKind { crash, exit, status, hang, timeout };

// The name the result document and the console use ("crash", "exit", "status", "hang",
// "timeout").
inline const char* to_string(RunErrorKind k) {
  switch (k) {
    case RunErrorKind::crash: return "crash";
    case RunErrorKind::exit: return "exit";
    case RunErrorKind::status: return "status";
    case RunErrorKind::hang: return "hang";
    case RunErrorKind::timeout: return "timeout";
  }
  return "status";
}

// Why a run ended in an error verdict (a backend plugin failed, or the scenario timed out), and
// where.
struct RunError {
  RunErrorKind kind = RunErrorKind::status;
  std::string op;        // the backend op in progress; empty when none was
  int32_t epoch = 0;     // 1-based; 0 while setting up (weights, warm-up, graph capture)
  int64_t step = 0;      // the step running within the epoch, 0-based
  int32_t layer = -1;    // the model layer of the latest backend call; -1: none
  std::string layer_kind;  // its kind; empty for none
  std::string signal;    // crash: SIGSEGV, SIGABRT, ...
  int32_t exit_code = 0;  // exit: the worker's exit status
  std::string message;   // one human line: what happened where (the console's verdict line)
};

}  // namespace kv
