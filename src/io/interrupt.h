// interrupt.h — SIGINT, SIGTERM and SIGHUP (the terminal or the ssh session went away) end
// kvcheck cleanly: the temporary result file being written (if any) is removed, a worker process
// (if any) is killed, "kvcheck: interrupted (SIGHUP)" (or SIGINT, SIGTERM) goes to stderr, and
// the process exits 128 + the signal: 130 (SIGINT), 143 (SIGTERM) or 129 (SIGHUP). Nothing
// half-written is left. A SIGKILL runs no handler: a worker then dies by its own death signal
// (plugin/worker.h), and a temporary file, if one was being written, stays. An interrupt kvcheck
// was started with ignored (`nohup` ignores SIGHUP) stays ignored.
//
// The handler does only async-signal-safe things (unlink, kill, write, _exit), on what was
// registered here beforehand in static storage.
#pragma once

#include <sys/types.h>

namespace kv {

// Installs the handlers (once, at start-up), on each interrupt that is not ignored already.
void install_interrupt_handlers();

// A forked worker calls this first: it dies by SIGINT, SIGTERM or SIGHUP (those not ignored at
// start-up), as any process would, and its parent (whose handler runs too) says what happened.
void reset_interrupt_handlers();

// The temporary file being written, removed on an interrupt; clear it once it has been renamed
// or removed. A path too long to keep is not registered (it would not open either).
void set_pending_temp_file(const char* path);
void clear_pending_temp_file();

// The worker processes running now (`run -j N` runs several), killed on an interrupt. At most
// kMaxRunningChildren are remembered; add returns false for one more (the caller refuses to start
// it).
inline constexpr int kMaxRunningChildren = 256;
bool add_running_child(pid_t pid);
void remove_running_child(pid_t pid);

}  // namespace kv
