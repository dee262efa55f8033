// interrupt.cpp — the SIGINT/SIGTERM/SIGHUP handler and what it cleans up.
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
volatile sig_atomic_t g_children[kMaxRunningChildren] = {};  // 0: a free slot

void write_stderr(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

extern "C" void on_interrupt(int sig) {
  for (const auto& child : g_children)
    if (child > 0) ::kill(static_cast<pid_t>(child), SIGKILL);
  if (g_have_temp) ::unlink(g_temp_path);
  switch (sig) {
    case SIGINT: write_stderr("\nkvcheck: interrupted (SIGINT)\n"); break;
    case SIGHUP: write_stderr("\nkvcheck: interrupted (SIGHUP)\n"); break;
    default: write_stderr("\nkvcheck: interrupted (SIGTERM)\n"); break;
  }
  ::_exit(128 + sig);
}

constexpr int kInterrupts[] = {SIGINT, SIGTERM, SIGHUP};

// The interrupts kvcheck was started with ignored: `nohup` ignores SIGHUP, a shell running a
// command in the background ignores SIGINT. Those stay ignored, in kvcheck and its workers.
sigset_t g_started_ignored;

void set_handler(int sig, void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = sigismember(&g_started_ignored, sig) ? SIG_IGN : handler;
  sigemptyset(&sa.sa_mask);
  // Block the others while the handler runs: one cleanup, one message.
  for (const int other : kInterrupts) sigaddset(&sa.sa_mask, other);
  ::sigaction(sig, &sa, nullptr);
}

}  // namespace

void install_interrupt_handlers() {
  sigemptyset(&g_started_ignored);
  for (const int sig : kInterrupts) {
    struct sigaction now {};
    if (::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN)
      sigaddset(&g_started_ignored, sig);
  }
  for (const int sig : kInterrupts) set_handler(sig, on_interrupt);
}

void reset_interrupt_handlers() {
  g_have_temp = 0;
  for (auto& child : g_children) child = 0;
  for (const int sig : kInterrupts) set_handler(sig, SIG_DFL);
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

bool add_running_child(pid_t pid) {
  for (auto& child : g_children) {
    if (child == 0) {
      child = pid;
      return true;
    }
  }
  return false;
}

void remove_running_child(pid_t pid) {
  for (auto& child : g_children)
    if (child == pid) child = 0;
}

}  // namespace kv
