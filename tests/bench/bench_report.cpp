// bench_report.cpp — kvbench_decode's output: the markdown table printed last and the JSON file
// (schema "kvbench_decode/1") that tests/bench/torch_decode.py merges with PyTorch's figures.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/bench/decode_bench.h"

namespace kv::bench {
namespace {

const char* dtype_label(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::fp8_e4m3: return "fp8";
  }
  return "?";
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else o += c;
  }
  return o + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string fmt(const char* f, double v) {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

std::string results_markdown(const DeviceInfo& dev, const std::vector<BenchResult>& results) {
  std::ostringstream o;
  o << "Device: " << dev.name << " (" << dev.sms << " SMs, " << fmt("%.0f", dev.l2_bytes / 1e6)
    << " MB L2). Copy bandwidth (device-to-device, read + write): " << fmt("%.3f", dev.copy_tbps)
    << " TB/s; streaming read: " << fmt("%.3f", dev.read_tbps) << " TB/s.\n\n";
  o << "| kind | dtype | batch | context | path | best max_splits | time (us) | floor at copy BW (us) "
       "| TB/s | % of copy | % of read | err vs generic | input sets |\n";
  o << "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const BenchResult& r : results) {
    const DecodeShape& s = r.shape;
    o << "| " << s.kind << " | " << dtype_label(s.dtype) << " | " << s.batch << " | " << s.context
      << " | ";
    if (!r.skipped.empty()) {
      o << "skipped: " << r.skipped << " | | | | | | | | |\n";
      continue;
    }
    const double floor_us = dev.copy_tbps > 0 ? r.bytes / (dev.copy_tbps * 1e12) * 1e6 : 0.0;
    o << (r.path.empty() ? "-" : r.path) << (r.error.empty() ? "" : " **FAILED**") << " | "
      << r.best_splits << " | " << fmt("%.1f", r.best_us) << " | " << fmt("%.1f", floor_us) << " | "
      << fmt("%.3f", r.tbps) << " | " << fmt("%.1f", 100.0 * r.copy_fraction) << " | "
      << (dev.read_tbps > 0 ? fmt("%.1f", 100.0 * r.tbps / dev.read_tbps) : std::string("-"))
      << " | " << fmt("%.2g", r.max_err) << " | " << r.input_sets << " |\n";
  }
  bool any_error = false;
  for (const BenchResult& r : results)
    if (!r.error.empty()) {
      if (!any_error) o << "\nFailures:\n";
      any_error = true;
      o << "- " << r.shape.kind << " " << dtype_label(r.shape.dtype) << " batch " << r.shape.batch
        << " ctx " << r.shape.context << ": " << r.error << "\n";
    }
  return o.str();
}

void write_results_json(const std::string& path, const DeviceInfo& dev,
                        const std::vector<BenchResult>& results) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << "{\n  \"schema\": \"kvbench_decode/1\",\n";
  f << "  \"device\": {\"name\": " << json_string(dev.name) << ", \"sms\": " << dev.sms
    << ", \"l2_bytes\": " << dev.l2_bytes << ", \"memory_gib\": " << num(dev.mem_gib)
    << ", \"copy_tbps\": " << num(dev.copy_tbps) << ", \"read_tbps\": " << num(dev.read_tbps)
    << "},\n";
  f << "  \"results\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const BenchResult& r = results[i];
    const DecodeShape& s = r.shape;
    f << (i ? ",\n" : "\n") << "    {\"kind\": " << json_string(s.kind)
      << ", \"dtype\": " << json_string(dtype_label(s.dtype)) << ", \"batch\": " << s.batch
      << ", \"context\": " << s.context << ", \"q_heads\": " << s.q_heads
      << ", \"kv_heads\": " << s.kv_heads << ", \"head_dim\": " << s.head_dim
      << ", \"v_dim\": " << s.v_dim << ", \"block_size\": " << s.block_size
      << ", \"path\": " << json_string(r.path) << ", \"skipped\": " << json_string(r.skipped)
      << ", \"error\": " << json_string(r.error) << ", \"input_sets\": " << r.input_sets
      << ", \"bytes\": " << num(r.bytes) << ", \"best_us\": " << num(r.best_us)
      << ", \"best_max_splits\": " << r.best_splits << ", \"tbps\": " << num(r.tbps)
      << ", \"copy_fraction\": " << num(r.copy_fraction) << ", \"max_err\": " << num(r.max_err)
      << ", \"tolerance\": " << num(r.tolerance) << ", \"sweep\": [";
    for (size_t j = 0; j < r.sweep.size(); ++j)
      f << (j ? ", " : "") << "{\"max_splits\": " << r.sweep[j].max_splits
        << ", \"us\": " << num(r.sweep[j].us) << "}";
    f << "]}";
  }
  f << "\n  ]\n}\n";
}

}  // namespace kv::bench
