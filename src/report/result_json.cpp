// result_json.cpp — RunResult to the "kvcheck.result/2" JSON document (report/version.h).
#include "report/result_json.h"

#include "report/coverage.h"
#include "report/format.h"
#include "report/version.h"

namespace kv {

using nlohmann::json;

json to_json(const Failure& f) {
  return json{
      {"epoch", f.epoch},
      {"step", f.step},
      {"request", f.request},
      {"position", f.position},
      {"layer", f.layer},
      {"head", f.head},
      {"site", site_name(f.site)},
      {"ops", site_op_names(f.site)},
      {"check", f.check},
      {"value", json_number(f.value)},
      {"tolerance", json_number(f.tolerance)},
      {"padded_batch", f.padded_batch},
      {"detail", f.detail},
  };
}

namespace {

// {site: value} over the drift sites (check_sites.h), in site order; with skip_unchecked,
// without the sites an epoch checked no row of (-1).
json by_site(const std::array<double, kNumCheckSites>& v, bool skip_unchecked) {
  json o = json::object();
  for (size_t i = 0; i < kNumCheckSites; ++i) {
    const auto site = static_cast<CheckSite>(i);
    if (!has_drift_check(site) || (skip_unchecked && v[i] == -1.0)) continue;
    o[std::string(site_name(site))] = json_number(v[i]);
  }
  return o;
}

// ---- coverage (report/coverage.h) ----

// Every mechanism's counter, by its name.
json mechanism_counts(const std::array<int64_t, kNumMechanisms>& counts) {
  json o = json::object();
  for (const MechanismInfo& m : all_mechanisms())
    o[std::string(m.name)] = counts[static_cast<size_t>(m.id)];
  return o;
}

json epoch_coverage(const EpochCounters& e) {
  std::array<int64_t, kNumMechanisms> counts{};
  for (const MechanismInfo& m : all_mechanisms())
    counts[static_cast<size_t>(m.id)] = mechanism_count(e, m.id);
  return mechanism_counts(counts);
}

json coverage_json(const RunCoverage& c) {
  json o = mechanism_counts(c.totals);
  o["usable_blocks"] = c.usable_blocks;
  o["blocks_allocated"] = c.blocks_allocated;
  o["pool_turnovers"] = json_number(c.pool_turnovers());
  return o;
}

json gaps_json(const std::vector<CoverageGap>& gaps) {
  json a = json::array();
  for (const CoverageGap& g : gaps)
    a.push_back({{"regression", g.regression}, {"mechanism", g.mechanism}, {"message", g.message}});
  return a;
}

// ---- end of coverage ----

}  // namespace

json to_json(const EpochStats& e) {
  json doc{
      {"epoch", e.epoch},
      {"requests", e.requests},
      {"checked_requests", e.checked_requests},
      {"clean_requests", e.clean_requests},
      {"clean_request_fraction", json_number(e.clean_request_fraction)},
      {"nonfinite_outputs", e.nonfinite_outputs},
      {"max_rel_error", json_number(e.max_rel_error)},
      {"max_rel_error_by_site", by_site(e.site_max_rel_error, true)},
      {"max_op_error_by_site", by_site(e.site_max_op_error, true)},
      {"max_op_bound_ratio_by_site", by_site(e.site_max_op_bound_ratio, true)},
      {"max_input_error_by_site", by_site(e.site_max_input_error, true)},
      {"first_bad_step", e.first_bad_step ? json(*e.first_bad_step) : json(nullptr)},
      {"steps", e.steps},
      {"graph_replays", e.graph_replays},
      {"preemptions", e.preemptions},
      {"tokens", e.tokens},
      {"prefix_hit_blocks", e.prefix_hit_blocks},
      {"blocks_allocated", e.blocks_allocated},
      {"peak_cached_tokens", e.peak_cached_tokens},
      {"seconds", json_number(e.seconds)},
      {"check_seconds", json_number(e.check_seconds)},
      {"reference_seconds", json_number(e.reference_seconds)},
      {"check_wait_seconds", json_number(e.check_wait_seconds)},
      {"forward_seconds", json_number(e.forward_seconds)},
      {"zero_init_seconds", json_number(e.zero_init_seconds)},
  };
  doc.update(epoch_coverage(e));
  return doc;
}

json to_json(const BackendReport& b) {
  json kinds = json::array();
  for (const auto& k : b.layer_kinds)
    kinds.push_back({{"layer_kind", k.layer_kind},
                     {"backend_calls", k.backend_calls},
                     {"total_calls", k.total_calls}});
  json ops = json::array();
  for (const auto& o : b.ops)
    ops.push_back({{"op", o.op},
                   {"placement", o.placement},
                   {"backend_calls", o.backend_calls},
                   {"builtin_calls", o.builtin_calls}});
  return json{{"path", b.path},       {"name", b.name},
              {"version", b.version}, {"sha256", b.sha256},
              {"abi_version", b.abi_version}, {"load_seconds", b.load_seconds},
              {"ops", std::move(ops)},
              {"backend_calls", b.backend_calls()}, {"total_calls", b.total_calls()},
              {"layer_kinds", std::move(kinds)}, {"notes", b.notes}};
}

json to_json(const RunError& e) {
  json doc{{"kind", to_string(e.kind)},
           {"op", e.op.empty() ? json(nullptr) : json(e.op)},
           {"epoch", e.epoch},
           {"step", e.step},
           {"layer", e.layer},
           {"layer_kind", e.layer_kind.empty() ? json(nullptr) : json(e.layer_kind)},
           {"message", e.message}};
  if (e.kind == RunErrorKind::crash) doc["signal"] = e.signal;
  if (e.kind == RunErrorKind::exit) doc["exit_code"] = e.exit_code;
  return doc;
}

json to_json(const DeviceInfo& d) {
  json gpu = nullptr;
  if (d.gpu) {
    const GpuInfo& g = *d.gpu;
    gpu = json{{"ordinal", g.ordinal},
               {"name", g.name},
               {"compute_capability", g.compute_capability},
               {"total_memory_bytes", g.total_memory_bytes},
               {"sm_count", g.sm_count},
               {"cuda_runtime_version", g.cuda_runtime_version},
               {"cuda_driver_version", g.cuda_driver_version},
               {"nvidia_driver_version",
                g.nvidia_driver_version ? json(*g.nvidia_driver_version) : json(nullptr)}};
  }
  return json{{"kind", d.kind},
              {"cpu_model", d.cpu_model ? json(*d.cpu_model) : json(nullptr)},
              {"hardware_threads", d.hardware_threads},
              {"gpu", std::move(gpu)}};
}

json to_json(const BuildIdentity& b) {
  return {{"version", b.version},
          {"commit", b.commit},
          {"dirty", b.dirty},
          {"build_type", b.build_type},
          {"cuda", *b.cuda_version ? json{{"version", b.cuda_version},
                                          {"architectures", b.cuda_architectures}}
                                   : json(nullptr)}};
}

json to_json(const RunResult& r) {
  json epochs = json::array();
  for (const auto& e : r.epochs) epochs.push_back(to_json(e));
  json doc = {
      {"schema", kResultSchema},
      {"kvcheck_version", build_identity().version},
      {"build", to_json(build_identity())},
      {"scenario", r.scenario},
      {"scenario_path", r.scenario_path},
      {"device", r.device},
      {"device_info", r.device_info ? to_json(*r.device_info) : json(nullptr)},
      {"seed", r.seed},
      {"regressions", r.regressions},
      {"expected", to_string(r.expected)},
      {"verdict", verdict_name(r.verdict)},
      {"meets_expectation", r.meets_expectation()},
      {"tolerance", json_number(r.tolerance)},
      {"tolerances", by_site(r.tolerances, false)},
      {"reference_mode", to_string(r.reference_mode)},
      {"reference_device", reference_device_name(r.reference_device)},
      {"checks_overlapped", r.checks_overlapped},
      {"stopped_at_first_failure", r.stopped_at_first_failure},
      {"epochs", std::move(epochs)},
      {"first_failure", r.first_failure ? to_json(*r.first_failure) : json(nullptr)},
      {"seconds", json_number(r.seconds)},
  };
  doc["coverage"] = coverage_json(run_coverage(r.epochs));
  doc["coverage_gaps"] = gaps_json(r.coverage_gaps);
  if (r.backend) doc["backend"] = to_json(*r.backend);
  if (r.error) doc["error"] = to_json(*r.error);
  // Only where it means something: a full-mode document stays as it always was.
  if (r.reference_mode == ReferenceMode::sampled)
    doc["reference_sampled_requests"] = r.reference_sampled_requests;
  if (!r.reference_mode_reason.empty()) doc["reference_mode_reason"] = r.reference_mode_reason;
  if (!r.reference_protection.empty()) doc["reference_protection"] = r.reference_protection;
  if (r.reference_device != ReferenceDevice::host) doc["reference_device_bytes"] = r.reference_device_bytes;
  if (r.op_rounding) {
    json sites = json::object();
    for (size_t i = 0; i < kNumCheckSites; ++i) {
      const auto site = static_cast<CheckSite>(i);
      if (!has_op_check(site)) continue;
      const OpRounding& o = (*r.op_rounding)[i];
      sites[std::string(site_name(site))] = {
          {"u_q", o.u_q}, {"u_kv", o.u_kv}, {"u_p", o.u_p}, {"u_out", o.u_out},
          {"u_acc", o.u_acc}, {"out_roundings", o.out_roundings}};
    }
    doc["op_check"] = {{"safety", r.op_bound_safety}, {"sites", sites}};
  }
  if (r.reference_agreement)
    doc["reference_agreement"] = {
        {"rows", r.reference_agreement->rows},
        {"max_rel_diff", json_number(r.reference_agreement->max_rel_diff)},
        {"logit_rows", r.reference_agreement->logit_rows},
        {"max_logit_rel_diff", json_number(r.reference_agreement->max_logit_rel_diff)}};
  return doc;
}

std::string dump_result(const json& doc) {
  // `replace` keeps a stray invalid UTF-8 byte in a detail string from throwing mid-report.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace kv
