// console_table.cpp — the human summary of a run (see console_table.h for what it looks like).
#include "report/console_table.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "report/coverage.h"
#include "report/format.h"

namespace kv {

namespace {

constexpr const char* kGreen = "\x1b[1;32m";
constexpr const char* kRed = "\x1b[1;31m";
constexpr const char* kReset = "\x1b[0m";

std::string or_dash(int32_t v) { return v < 0 ? "-" : std::to_string(v); }

std::vector<std::string> epoch_row(const EpochStats& e) {
  return {std::to_string(e.epoch),
          std::to_string(e.requests),
          format_percent(e.clean_request_fraction),
          std::to_string(e.nonfinite_outputs),
          format_error_value(e.max_rel_error),
          e.first_bad_step ? std::to_string(*e.first_bad_step) : "-",
          std::to_string(e.steps),
          format_duration(e.seconds)};
}

// "coverage: blocks recycled 146 (2.13 pool turnovers), graph replays 14, ..." wrapped at 100
// columns, then a line per coverage gap.
std::vector<std::string> coverage_lines(const RunResult& r) {
  const RunCoverage c = run_coverage(r.epochs);
  std::vector<std::string> items;
  for (const MechanismInfo& m : all_mechanisms()) {
    std::string name(m.name);
    std::replace(name.begin(), name.end(), '_', ' ');
    std::string item = fmt::format("{} {}", name, c.count(m.id));
    if (m.id == Mechanism::blocks_recycled)
      item += fmt::format(" ({:.2f} pool turnovers)", c.pool_turnovers());
    items.push_back(std::move(item));
  }
  std::vector<std::string> lines{"coverage:"};
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string item = items[i] + (i + 1 < items.size() ? "," : "");
    if (lines.back().size() + 1 + item.size() > 100) lines.emplace_back(" ");
    lines.back() += " " + item;
  }
  for (const auto& g : r.coverage_gaps)
    lines.push_back(fmt::format("  not reached: {} {}", g.regression, g.message));
  return lines;
}

}  // namespace

ConsoleStyle console_style_for(const std::ostream& os) {
  int fd = -1;
  if (&os == &std::cout) fd = STDOUT_FILENO;
  if (&os == &std::cerr || &os == &std::clog) fd = STDERR_FILENO;
  const char* no_color = std::getenv("NO_COLOR");
  bool colour = fd >= 0 && ::isatty(fd) && !(no_color && *no_color);
  return ConsoleStyle{colour};
}

void print_aligned(std::ostream& os, const std::vector<std::string>& header,
                   const std::vector<std::vector<std::string>>& rows, int indent) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());

  auto print_line = [&](const std::vector<std::string>& cells) {
    std::string line(static_cast<size_t>(indent), ' ');
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      line += fmt::format("{}{:>{}}", c ? "  " : "", cell, width[c]);
    }
    os << line << '\n';
  };
  print_line(header);
  for (const auto& row : rows) print_line(row);
}

std::string verdict_line(const RunResult& r, const ConsoleStyle& style) {
  if (r.verdict == Verdict::error) {  // whatever the scenario expects: the backend failed
    const std::string what = r.error ? r.error->message : "the run failed";
    if (!style.colour) return fmt::format("verdict: error — {}", what);
    return fmt::format("verdict: {}error{} — {}", kRed, kReset, what);
  }
  const bool ok = r.meets_expectation();
  const std::string verdict = verdict_name(r.verdict);
  const std::string status = ok ? "OK" : "MISMATCH";
  if (!style.colour)
    return fmt::format("verdict: {} (expected {}) — {}", verdict, to_string(r.expected), status);
  const char* c = ok ? kGreen : kRed;
  return fmt::format("verdict: {}{}{} (expected {}) — {}{}{}", c, verdict, kReset,
                     to_string(r.expected), c, status, kReset);
}

std::string failure_line(const Failure& f) {
  std::string line = fmt::format(
      "first failure: epoch {}, step {}, request {}, position {}, layer {}, head {}, site {} "
      "(ops {}), check {}: value {}",
      f.epoch, f.step, f.request, f.position, or_dash(f.layer), or_dash(f.head),
      site_name(f.site), join(site_op_names(f.site), ", "), f.check.empty() ? "-" : f.check,
      format_error_value(f.value));
  // A non-finite check has no tolerance (0); "(tolerance 0)" would only puzzle the reader.
  if (f.tolerance != 0.0) line += " (tolerance " + format_error_value(f.tolerance) + ")";
  if (f.padded_batch) line += " [padded graph replay]";
  return line;
}

std::string gpu_line(const GpuInfo& g) {
  return fmt::format("gpu: {} (cc {}, {} SMs, {:.1f} GiB)   driver {} (CUDA {}), runtime {}",
                     g.name, g.compute_capability, g.sm_count,
                     static_cast<double>(g.total_memory_bytes) / (1ull << 30),
                     g.nvidia_driver_version.value_or("unknown"), g.cuda_driver_version,
                     g.cuda_runtime_version);
}

void print_run(std::ostream& os, const RunResult& r, const ConsoleStyle& style) {
  os << "scenario: " << r.scenario;
  if (!r.scenario_path.empty()) os << " (" << r.scenario_path << ")";
  os << '\n';
  os << fmt::format("device: {}   seed: {}   regressions: {}   tolerance: {}\n", r.device, r.seed,
                    r.regressions.empty() ? "none" : join(r.regressions, ", "),
                    format_error_value(r.tolerance));
  if (r.device_info && r.device_info->gpu) os << gpu_line(*r.device_info->gpu) << '\n';
  if (r.backend) {
    const BackendReport& b = *r.backend;
    std::vector<std::string> kinds;
    for (const auto& k : b.layer_kinds)
      kinds.push_back(fmt::format("{} {}/{}", k.layer_kind, k.backend_calls, k.total_calls));
    os << fmt::format("backend: {} {} ({}) ran {} of {} op calls{}\n", b.name, b.version, b.path,
                      b.backend_calls(), b.total_calls(),
                      kinds.empty() ? "" : " (" + join(kinds, ", ") + ")");
    std::vector<std::string> on;
    for (const auto& o : b.ops)
      if (o.placement == "backend") on.push_back(o.op);
    os << "  on the backend: " << (on.empty() ? "none" : join(on, ", ")) << '\n';
    for (const auto& n : b.notes) os << "  " << n << '\n';
  }
  // Sampled mode changes what "clean" and "max rel err" cover; say so where the figures are.
  if (r.reference_mode == ReferenceMode::sampled || r.reference_device != ReferenceDevice::host) {
    const std::string mode =
        r.reference_mode == ReferenceMode::full
            ? "full"
            : fmt::format("sampled, {} request{} per epoch", r.reference_sampled_requests,
                          r.reference_sampled_requests == 1 ? "" : "s");
    os << fmt::format("reference: {}{}{}\n", mode,
                      r.reference_device == ReferenceDevice::host
                          ? ""
                          : " on " + std::string(reference_device_name(r.reference_device)),
                      r.reference_mode_reason.empty() ? "" : " (" + r.reference_mode_reason + ")");
  }
  os << '\n';

  std::vector<std::vector<std::string>> rows;
  for (const auto& e : r.epochs) rows.push_back(epoch_row(e));
  if (!rows.empty() || r.verdict != Verdict::error) {  // an error run may have no epoch to show
    print_aligned(os,
                  {"epoch", "requests", "clean", "non-finite", "max rel err", "first bad step",
                   "steps", "time"},
                  rows);
    os << '\n';
  }
  // What the zero-init mitigation costs, per step, beside what a step costs (seed 001).
  for (const auto& e : r.epochs) {
    if (e.zero_init_seconds <= 0.0 || e.steps == 0) continue;
    const double step_us = 1e6 * e.forward_seconds / e.steps;
    const double zero_us = 1e6 * e.zero_init_seconds / e.steps;
    os << fmt::format("zero-init outputs, epoch {}: the memsets take {:.1f} us/step of a {:.1f} us/step "
                      "forward ({:.1f}%)\n",
                      e.epoch, zero_us, step_us, step_us > 0 ? 100.0 * zero_us / step_us : 0.0);
  }

  if (!r.epochs.empty())
    for (const auto& line : coverage_lines(r)) os << line << '\n';

  os << verdict_line(r, style) << '\n';
  if (r.first_failure) {
    os << failure_line(*r.first_failure) << '\n';
    if (!r.first_failure->detail.empty()) os << "  " << r.first_failure->detail << '\n';
  }
  if (r.stopped_at_first_failure)
    os << fmt::format("stopped at the first failure (--fail-fast): the steps after it were not "
                      "run; the figures cover the {} epoch{} that ran\n",
                      r.epochs.size(), r.epochs.size() == 1 ? "" : "s");
}

}  // namespace kv
