// interrupt.h — SIGINT and SIGTERM end kvcheck cleanly: the temporary result file being written
// (if any) is removed, a worker process (if any) is killed, "kvcheck: interrupted" goes to
// stderr, and the process exits 130 (SIGINT) or 143 (SIGTERM). Nothing half-written is left.
//
// The handler does only async-signal-safe things (unlink, kill, write, _exit), on what was
// registered here beforehand in static storage.
#pragma once

#include <sys/types.h>

namespace kv {

// Installs the handlers (once, at start-up).
void install_interrupt_handlers();

// A forked worker calls this first: it dies by the signal, as any process would, and its parent
// (whose handler runs too) says what happened.
void reset_interrupt_handlers();

// The temporary file being written, removed on an interrupt; clear it once it has been renamed
// or removed. A path too long to keep is not registered (it would not open either).
void set_pending_temp_file(const char* path);
void clear_pending_temp_file();

// The worker process running now, killed on an interrupt; 0 when none.
void set_running_child(pid_t pid);

}  // namespace kv
