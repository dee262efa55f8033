// interrupt.cpp — the SIGINT/SIGTERM handler and what it cleans up.
#include "io/interrupt.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace kv {
namespace {

char g_temp_path[PATH_MAX];
volatile sig_atomic_t g_have_temp = 0;
volatile sig_atomic_t g_child = 0;

void write_stderr(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

extern "C" void on_interrupt(int sig) {
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), SIGKILL);
  if (g_have_temp) ::unlink(g_temp_path);
  write_stderr(sig == SIGINT ? "\nkvcheck: interrupted (SIGINT)\n"
                             : "\nkvcheck: interrupted (SIGTERM)\n");
  ::_exit(128 + sig);
}

void set_handler(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  // Block the other one while the handler runs: one cleanup, one message.
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

void install_interrupt_handlers() { set_handler(on_interrupt); }

void reset_interrupt_handlers() {
  g_have_temp = 0;
  g_child = 0;
  set_handler(SIG_DFL);
}

void set_pending_temp_file(const char* path) {
  g_have_temp = 0;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const std::size_t n = std::strlen(path);
  if (n >= sizeof(g_temp_path)) return;
  std::memcpy(g_temp_path, path, n + 1);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  g_have_temp = 1;
}

void clear_pending_temp_file() { g_have_temp = 0; }

void set_running_child(pid_t pid) { g_child = pid; }

}  // namespace kv
