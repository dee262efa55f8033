// memory_fit.cpp — the fit check with its message, and the budget's spelling.
#include "cli/memory_fit.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "report/format.h"

namespace kv::cli {
namespace {

// The items that make up most of `need` (the biggest, and the next while the ones named cover
// less than 60% of it), as "lower A, B or C (the KV cache: 1.2 GiB)".
std::string what_to_lower(std::vector<MemoryItem> items, int64_t need) {
  std::sort(items.begin(), items.end(),
            [](const MemoryItem& a, const MemoryItem& b) { return a.bytes > b.bytes; });
  std::string text;
  int64_t named = 0;
  for (const MemoryItem& i : items) {
    if (i.fields.empty() || i.bytes <= 0) continue;
    if (!text.empty()) text += "; or ";
    text += fmt::format("{} (the {}: {})", i.fields, i.what, format_bytes(i.bytes));
    named += i.bytes;
    if (named >= 0.6 * need) break;
  }
  return text.empty() ? "" : ": lower " + text;
}

std::vector<MemoryItem> items_where(const RunCost& c, bool on_device) {
  std::vector<MemoryItem> out;
  for (const auto& i : c.memory)
    if (i.on_device == on_device) out.push_back(i);
  return out;
}

// "`ulimit -v` (RLIMIT_AS) is 600 MiB, of which 40.0 MiB is in use: 560 MiB left".
std::string cap_text(const MemoryCap& c) {
  return fmt::format("{} is {}, of which {} is in use: {} left", c.name, format_bytes(c.limit),
                     format_bytes(c.used), format_bytes(c.left()));
}

// The host-side limit that a run exceeds by the most: what it needs of it and what is left.
struct Shortfall {
  int64_t need = 0, left = 0;
  std::string needs;              // "about 1.2 GiB of host memory (estimate; ...)"
  std::string limit;              // "this machine has 2.0 GiB available", cap_text(...)
  std::vector<MemoryItem> items;  // what counts towards `need`
};

constexpr const char* kItemised = "`kvcheck validate FILE` itemises it";

// Checker threads beyond the calling one that a run may start: one per reference extended at
// once, as many as the machine has cores (util/parallel_for.h); on a GPU one more, on which the
// checks overlap the engine (check/check_pipeline.h).
int64_t extra_threads(const RunCost& cost, const MemoryLimits& l, bool device_is_host) {
  return std::max<int64_t>(0, std::min(cost.references_at_once, l.checker_threads) - 1) +
         (device_is_host ? 0 : 1);
}

// What a run needs under a limit on this process: `estimate` bytes of `of_what` and what each of
// its `threads` reserves (`per_thread`, of `reservation`). Thread reservations are counted
// although glibc and parallel_for cope when one cannot be had (no arena: another is shared; no
// thread: fewer workers): one had early keeps its stack and 64 MiB arena, and the run's later
// allocations fail for it (measured under `ulimit -v`: std::bad_alloc 30-50 MiB above a limit
// that counted no thread; under `ulimit -d` at the limit that counted no stack).
std::pair<int64_t, std::string> process_need(int64_t estimate, const char* of_what,
                                             const char* device_note, int64_t threads,
                                             int64_t per_thread, const char* reservation) {
  const int64_t reserved = threads * per_thread;
  std::string text = fmt::format("about {} of {}", format_bytes(estimate + reserved), of_what);
  if (reserved <= 0 && !*device_note) return {estimate, text + " (estimate; " + kItemised + ")"};
  text += fmt::format(": the estimate, {} ({}){}", format_bytes(estimate), kItemised, device_note);
  if (reserved > 0)
    text += fmt::format(", and {} for the {} of {} more checker thread{}", format_bytes(reserved),
                        reservation, threads, threads == 1 ? "" : "s");
  return {estimate + reserved, text};
}

std::optional<Shortfall> host_shortfall(const RunCost& cost, const MemoryLimits& l,
                                        bool device_is_host) {
  const int64_t host = device_is_host ? cost.total_bytes() : cost.host_bytes();
  const std::vector<MemoryItem> host_items =
      device_is_host ? cost.memory : items_where(cost, false);
  const std::string host_needs =
      fmt::format("about {} of host memory (estimate; {})", format_bytes(host), kItemised);
  std::optional<Shortfall> worst;
  const auto consider = [&](int64_t need, int64_t left, const std::string& needs,
                            std::string limit, const std::vector<MemoryItem>& items) {
    if (need <= left || (worst && need - left <= worst->need - worst->left)) return;
    worst = Shortfall{need, left, needs, std::move(limit), items};
  };
  if (l.host_available)
    consider(host, *l.host_available, host_needs,
             fmt::format("this machine has {} available", format_bytes(*l.host_available)),
             host_items);
  if (l.cgroup) consider(host, l.cgroup->left(), host_needs, cap_text(*l.cgroup), host_items);
  const int64_t threads = extra_threads(cost, l, device_is_host);
  // Thread stacks are private writable memory: VmData, which RLIMIT_DATA counts.
  if (l.data) {
    const auto [need, needs] =
        process_need(host, "host memory", "", threads, l.thread_stack, "stack");
    consider(need, l.data->left(), needs, cap_text(*l.data), host_items);
  }
  // The CUDA driver maps each cudaMalloc into the process's address space too (measured: VmSize
  // grows by the bytes allocated), so under RLIMIT_AS the device part counts on any device.
  if (l.address_space) {
    const auto [need, needs] = process_need(
        cost.total_bytes(), "address space",
        device_is_host ? "" : ", device memory included (the CUDA driver maps it there too)",
        threads, l.thread_stack + l.thread_arena, "stack and malloc arena");
    consider(need, l.address_space->left(), needs, cap_text(*l.address_space), cost.memory);
  }
  return worst;
}

}  // namespace

std::optional<std::string> memory_refusal(const std::string& scenario, const RunCost& cost,
                                          const MemoryLimits& limits) {
  const int64_t total = cost.total_bytes();
  if (limits.budget && total > *limits.budget)
    return fmt::format("{} needs about {} of memory (estimate; {}), above --max-memory {}{}",
                       scenario, format_bytes(total), kItemised, format_bytes(*limits.budget),
                       what_to_lower(cost.memory, total - *limits.budget));
  if (auto s = host_shortfall(cost, limits, limits.device_is_host))
    return fmt::format("{} needs {} but {}{}", scenario, s->needs, s->limit,
                       what_to_lower(s->items, s->need - s->left));
  if (limits.device_free && cost.device_bytes() > *limits.device_free) {
    // The host device could take it only if every host limit has room for all of it.
    const bool host_could = !host_shortfall(cost, limits, true) && limits.host_available &&
                            !limits.budget.has_value();
    return fmt::format("{} needs about {} of device memory (estimate; {}) but the device has {} "
                       "free{}{}",
                       scenario, format_bytes(cost.device_bytes()), kItemised,
                       format_bytes(*limits.device_free),
                       what_to_lower(items_where(cost, true),
                                     cost.device_bytes() - *limits.device_free),
                       host_could ? fmt::format("; or run it on the host (--device host), which "
                                                "has {} available",
                                                format_bytes(*limits.host_available))
                                  : "");
  }
  return std::nullopt;
}

std::optional<int64_t> parse_memory_size(const std::string& text) {
  // CLI11 passes "-1" through and reads a bare "G" as 1 G: a size starts with a digit.
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;
  std::string bytes = text;
  static const CLI::AsSizeValue as_size(/*kb_is_1000=*/false);
  try {
    if (!as_size(bytes).empty()) return std::nullopt;
  } catch (const CLI::Error&) {  // an unknown unit is thrown, not returned
    return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(bytes.data(), bytes.data() + bytes.size(), value);
  if (ec != std::errc() || end != bytes.data() + bytes.size()) return std::nullopt;
  if (value < 1 || value > (int64_t{1} << 62)) return std::nullopt;
  return value;
}

}  // namespace kv::cli
