// result_schema.cpp — the result document's schema, field by field in to_json's order.
#include "report/result_schema.h"

#include <algorithm>
#include <vector>

#include "ops/op_table.h"
#include "report/format.h"
#include "report/result_json.h"
#include "report/schema_parts.h"
#include "result/check_sites.h"
#include "scenario/enum_names.h"
#include "scenario/mechanisms.h"
#include "scenario/regressions.h"
#include "scenario/schema_text.h"

namespace kv {
namespace {

using schema_parts::described;
using schema_parts::integer;
using schema_parts::object;

template <class Names>
Json enum_of(const Names& names) {
  Json e = Json::array();
  for (const auto& n : names) e.push_back(std::string(n));
  return Json{{"enum", e}};
}

// Numbers that can be non-finite are written as the strings "nan", "inf", "-inf".
Json number() { return Json{{"$ref", "#/$defs/number"}}; }

template <class Table>
std::vector<std::string> names_of(const Table& table) {
  std::vector<std::string> names;
  for (const auto& e : table) names.emplace_back(e.name);
  return names;
}

Json failure_schema() {
  std::vector<std::string> checks;
  for (size_t i = 0; i < kNumCheckKinds; ++i)
    checks.emplace_back(check_kind_name(static_cast<CheckKind>(i)));
  Json ops = enum_of(names_of(all_device_ops()));
  return described(
      "The first output that failed a check, in the order the ops ran; null when none did.",
      object(Json{
          {"epoch", described("1-based.", integer(1))},
          {"step", described("Step within the epoch, 0-based.", integer(0))},
          {"request", described("Request id: its index in the workload.", integer(0))},
          {"position", described("Token position within the request.", integer(0))},
          {"layer", described("-1 where the check is not per layer (sampled_token).", integer(-1))},
          {"head", described("-1 where the check is not per head.", integer(-1))},
          {"site", described("The kind of row that failed (`kvcheck list`: check sites).",
                             enum_of(names_of(all_check_sites())))},
          {"ops", described("The ops whose output the site checks, in the order they run.",
                            Json{{"type", "array"}, {"items", ops}, {"minItems", 1}})},
          {"check", enum_of(checks)},
          {"value", described("The error that failed, or \"nan\".", number())},
          {"tolerance", described("0 for a non-finite check.", number())},
          {"padded_batch", described("The step replayed a graph with padded rows.",
                                     Json{{"type", "boolean"}})},
          {"detail", Json{{"type", "string"}}},
      }));
}

// {site: number} over the check sites that have a drift check.
Json site_map() {
  Json props = Json::object();
  for (const CheckSiteInfo& i : all_check_sites())
    if (has_drift_check(i.site)) props[std::string(i.name)] = Json{{"$ref", "#/$defs/number"}};
  return Json{{"type", "object"}, {"properties", props}, {"additionalProperties", false}};
}

// ---- coverage (report/coverage.h) ----

// {mechanism: count} for every mechanism, each described by the mechanism table.
Json mechanism_properties() {
  Json props = Json::object();
  for (const MechanismInfo& m : all_mechanisms())
    props[std::string(m.name)] = described(std::string(m.counts) + ".", integer(0));
  return props;
}

Json coverage_schema() {
  Json props = mechanism_properties();
  props["usable_blocks"] = described("The pool's blocks less the null block.", integer(0));
  props["blocks_allocated"] = described("Blocks handed out over all epochs.", integer(0));
  props["pool_turnovers"] =
      described("blocks_allocated / usable_blocks: 1 is one pool's worth; blocks are recycled "
                "only past it (the free queue hands out every never-used block first).",
                number());
  return described("What the run exercised: each mechanism's counter summed over the epochs.",
                   object(std::move(props)));
}

Json coverage_gaps_schema() {
  Json gap = object(Json{
      {"regression", enum_of(regression_names())},
      {"mechanism", described("The coverage counter that stayed 0, or the scenario field under "
                              "which the regression cannot show (cache.dtype, cache.layout, "
                              "engine.zero_init_outputs, engine.zero_new_blocks, "
                              "faults.freed_blocks, model.layers; backend.paged_prefill: a "
                              "backend's fused prefill replaced the chain a prefill-chain "
                              "regression lives in).",
                              Json{{"type", "string"}})},
      {"message", described("One line: \"needs recycled blocks, but the pool never turned "
                            "over (...)\".",
                            Json{{"type", "string"}})},
  });
  return described("For each regression that was on, what kept the run from reaching it; empty "
                   "when nothing did. A clean verdict with a gap means \"not reached\", not "
                   "\"not there\".",
                   Json{{"type", "array"}, {"items", gap}});
}

// ---- end of coverage ----

Json op_check_schema() {
  Json rounding = object({{"u_q", number()},
                          {"u_kv", number()},
                          {"u_p", number()},
                          {"u_out", number()},
                          {"u_acc", number()},
                          {"out_roundings", integer(1)}});
  Json sites = Json::object();
  for (const CheckSiteInfo& i : all_check_sites())
    if (has_op_check(i.site)) sites[std::string(i.name)] = rounding;
  return described(
      "Only with checks.op_drift (and the CPU reference): what each op output row's bound was "
      "made of (docs/oracle.md): per attention and MLA site, the unit roundoffs the ops were "
      "taken to round q, K/V, the softmax weights P and the output in (0: exact), their float "
      "accumulation's and how many times an output is rounded; and the safety factor over the "
      "estimate.",
      object({{"safety", number()}, {"sites", object(std::move(sites))}}));
}

Json epoch_schema() {
  Json props{
      {"epoch", integer(1)},
      {"requests", integer(0)},
      {"checked_requests", described("Requests compared with the reference: all of them in full "
                                     "mode, the sample's in sampled mode.",
                                     integer(0))},
      {"clean_requests", integer(0)},
      {"clean_request_fraction", number()},
      {"nonfinite_outputs", integer(0)},
      {"max_rel_error", described("\"nan\" once a checked row was non-finite.", number())},
      {"max_rel_error_by_site",
       described("The same per drift check site; a site the epoch checked no row of is absent.",
                 site_map())},
      {"max_op_error_by_site",
       described("checks.op_drift: per attention or MLA site, the largest relative L2 error of "
                 "an op's output row against float64 over its own inputs; a site with no row "
                 "judged so is absent.",
                 site_map())},
      {"max_op_bound_ratio_by_site",
       described("The same rows' largest error / bound (the bound of op_check; above 1 failed).",
                 site_map())},
      {"max_input_error_by_site",
       described("The same rows' largest relative L2 distance between the op's float64 value "
                 "over the engine's inputs and the end-to-end reference (denominator floored as "
                 "max_rel_error_by_site's): the share of the end-to-end error the op's inputs "
                 "brought, upstream rounding compounded over the layers. With "
                 "max_op_error_by_site it says whether the op or what fed it moved a row.",
                 site_map())},
      {"first_bad_step", Json{{"type", {"integer", "null"}}, {"minimum", 0}}},
      {"steps", integer(0)},
      {"graph_replays", integer(0)},
      {"preemptions", integer(0)},
      {"tokens", integer(0)},
      {"prefix_hit_blocks", integer(0)},
      {"blocks_allocated", integer(0)},
      {"peak_cached_tokens", integer(0)},
      {"seconds", number()},
      {"check_seconds",
       described("Spent checking the epoch's steps: the reference and the comparisons (with "
                 "checks_overlapped, mostly while the engine ran the next step).",
                 number())},
      {"reference_seconds",
       described("Of check_seconds: computing the float64 reference (the rest: comparisons).",
                 number())},
      {"check_wait_seconds",
       described("Of seconds: how long the engine waited for the checks (check_seconds when "
                 "the checks do not overlap the engine).",
                 number())},
      {"forward_seconds", described("Of which the model's steps on the device.", number())},
      {"zero_init_seconds", described("The zero-init mitigation's memsets; 0 when off.", number())},
  };
  props.update(mechanism_properties());  // the coverage counters, per epoch
  return object(std::move(props));
}

Json backend_schema() {
  Json op = object(Json{
      {"op", Json{{"type", "string"}}},
      {"placement", described("backend: it ran there; builtin: on the built-in device (not "
                              "implemented, pinned with --backend-op, or fallen back); unused: "
                              "the run never called it (e.g. the chain a fused paged_prefill "
                              "replaces).",
                              enum_of(std::vector<std::string>{"backend", "builtin", "unused"}))},
      {"backend_calls", integer(0)},
      {"builtin_calls", integer(0)},
  });
  Json kind = object(Json{
      {"layer_kind", enum_of(std::vector<std::string>{"attention", "mla", "linear"})},
      {"backend_calls", integer(0)},
      {"total_calls", integer(0)},
  });
  return described(
      "Only with --backend: the plugin under test and what it ran of the scenario.",
      object(Json{
          {"path", Json{{"type", "string"}}},
          {"name", Json{{"type", "string"}}},
          {"version", Json{{"type", "string"}}},
          {"sha256", described("Of the library file, as sha256sum prints it; for python:MODULE "
                               "over the module's source files (path is the module's file).",
                               Json{{"type", "string"}, {"pattern", "^[0-9a-f]{64}$"}})},
          {"abi_version", integer(1)},
          {"load_seconds",
           described("Wall seconds from loading the library to the end of its init: for "
                     "python:MODULE the interpreter's start and the module's import (kernels a "
                     "library compiles at their first call count in the op time).",
                     Json{{"type", "number"}, {"minimum", 0}})},
          {"ops", Json{{"type", "array"}, {"items", op}}},
          {"backend_calls", described("Op calls the backend ran (never 0 in a result).",
                                      integer(1))},
          {"total_calls", integer(0)},
          {"layer_kinds", described("Per layer kind of the model (attention, mla, linear): the op "
                                    "calls the backend ran of all the calls of that kind's "
                                    "layers. 0 of N: those layers were not judged.",
                                    Json{{"type", "array"}, {"items", kind}})},
          {"notes", Json{{"type", "array"}, {"items", Json{{"type", "string"}}}}},
      }));
}

Json error_schema() {
  return described(
      "Only with verdict error: a backend plugin crashed (a signal), exited the process (exit(), "
      "any code), returned an error status, or did not return within --backend-timeout; or the "
      "scenario ran past --timeout-per-scenario (timeout).",
      object(Json{
                 {"kind", enum_of(std::vector<std::string>{"crash", "exit", "status", "hang",
                                                           "timeout"})},
                 {"op", described("The backend op in progress; null when none was.",
                                  Json{{"type", {"string", "null"}}})},
                 {"epoch", described("1-based; 0 while setting up (warm-up, graph capture).",
                                     integer(0))},
                 {"step", described("The step running within the epoch, 0-based.", integer(0))},
                 {"layer", described("The model layer of the latest backend call; -1 when none.",
                                     integer(-1))},
                 {"layer_kind", described("Its kind; null when none.",
                                          Json{{"type", {"string", "null"}}})},
                 {"signal", described("crash only: SIGSEGV, SIGABRT, ...",
                                      Json{{"type", "string"}})},
                 {"exit_code", described("exit only: the worker's exit status.", integer(-1))},
                 {"message", described("What happened where, in one line.",
                                       Json{{"type", "string"}})},
             },
             {"signal", "exit_code"}));
}

Json device_info_schema() {
  Json version = Json{{"type", "string"}, {"pattern", "^[0-9]+\\.[0-9]+$"}};
  Json gpu = object(Json{
      {"ordinal", described("The CUDA device index.", integer(0))},
      {"name", described("As the driver names it: \"NVIDIA H100 80GB HBM3\".",
                         Json{{"type", "string"}})},
      {"compute_capability", described("major.minor: \"9.0\".", version)},
      {"total_memory_bytes", integer(0)},
      {"sm_count", integer(0)},
      {"cuda_runtime_version", described("The CUDA runtime kvcheck runs (cudaRuntimeGetVersion).",
                                         version)},
      {"cuda_driver_version", described("The newest CUDA the driver supports "
                                        "(cudaDriverGetVersion).",
                                        version)},
      {"nvidia_driver_version",
       described("From /proc/driver/nvidia/version: \"580.159.04\"; null when unreadable.",
                 Json{{"type", {"string", "null"}}})},
  });
  Json info = object(Json{
      {"kind", described("The device, as \"device\" says.",
                         enum_of(std::vector<std::string>{"host", "cuda"}))},
      {"cpu_model", described("/proc/cpuinfo's \"model name\"; null when unreadable.",
                              Json{{"type", {"string", "null"}}})},
      {"hardware_threads", integer(1)},
      {"gpu", described("The GPU and its CUDA stack; null on the host.",
                        Json{{"oneOf", Json::array({Json{{"type", "null"}}, gpu})}})},
  });
  return described(
      "Where the run happened; null only for a run whose worker died (verdict error) on a GPU.",
      Json{{"oneOf", Json::array({Json{{"type", "null"}}, info})}});
}

}  // namespace

std::string result_schema_text() {
  Json regressions = enum_of(regression_names());
  Json doc{
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"$id", "https://github.com/kvcheck/kvcheck/scenarios/schema/result.schema.json"},
      {"title", std::string("kvcheck result document, ") + kResultSchema},
      {"description",
       "What one `kvcheck run` of one scenario found (`--out DIR/<file>.json`, or one of the "
       "results of `--json`'s document, run.schema.json). Generated by `kvcheck schema "
       "result` from the check-site, op and regression tables. Version 2 renamed "
       "first_failure.op to first_failure.site and added first_failure.ops; verdict error and "
       "its error block, device_info, tolerances (per site), epochs[].max_rel_error_by_site, "
       "coverage, coverage_gaps, the epochs' coverage counters, op_check, "
       "epochs[].max_op_*_by_site and max_input_error_by_site (and first_failure.check "
       "op_drift), build, command_line, settings, scenario_sha256 and started_at were added within "
       "it."},
  };
  Json props{
      {"schema", Json{{"const", kResultSchema}}},
      {"kvcheck_version", described("build.version, kept for readers of older results.",
                                    Json{{"type", "string"}})},
      {"build",
       described("Which kvcheck made this result (also `kvcheck --version`): commit is the git "
                 "commit of the source tree at build time (\"unknown\" outside git), dirty "
                 "whether its tracked files differed from it; cuda is null for a host-only "
                 "build.",
                 object(Json{{"version", Json{{"type", "string"}}},
                             {"commit", Json{{"type", "string"},
                                             {"pattern", "^([0-9a-f]{40}|[0-9a-f]{64}|unknown)$"}}},
                             {"dirty", Json{{"type", "boolean"}}},
                             {"build_type", Json{{"type", "string"}}},
                             {"cuda", Json{{"oneOf",
                                            Json::array({Json{{"type", "null"}},
                                                         object(Json{{"version", Json{{"type", "string"}}},
                                                                     {"architectures",
                                                                      Json{{"type", "string"}}}})})}}}}))},
      {"command_line",
       described("The kvcheck command line that made it, word by word (written by `kvcheck "
                 "run`).",
                 Json{{"type", "array"}, {"items", Json{{"type", "string"}}}})},
      {"settings",
       described("The run's `--set KEY=VALUE` changes to the scenario file, in order: each "
                 "field's JSON pointer and the value it was given (written by `kvcheck run` "
                 "when there are any).",
                 Json{{"type", "array"},
                      {"items", Json{{"type", "object"},
                                     {"required", Json::array({"pointer", "value"})},
                                     {"additionalProperties", false},
                                     {"properties", Json{{"pointer", Json{{"type", "string"}}},
                                                         {"value", Json::object()}}}}}})},
      {"scenario_sha256",
       described("SHA-256 of the scenario file's bytes as run, as sha256sum prints it (written "
                 "by `kvcheck run`).",
                 Json{{"type", "string"}, {"pattern", "^[0-9a-f]{64}$"}})},
      {"started_at",
       described("When the scenario's run began, UTC, ISO 8601 to the second (written by "
                 "`kvcheck run`).",
                 Json{{"type", "string"},
                      {"pattern", "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"}})},
      {"scenario", described("The scenario's name.", Json{{"type", "string"}})},
      {"scenario_path", Json{{"type", "string"}}},
      {"device", described("Where the ops ran: host or cuda.", Json{{"type", "string"}})},
      {"device_info", device_info_schema()},
      {"seed", integer(0)},
      {"regressions", described("The regressions that were on, in registry order.",
                                Json{{"type", "array"}, {"items", regressions},
                                     {"uniqueItems", true}})},
      {"expected", enum_of(names_of(kExpectationNames))},
      {"verdict", enum_of(std::vector<std::string>{verdict_name(Verdict::clean),
                                                   verdict_name(Verdict::corrupt),
                                                   verdict_name(Verdict::error)})},
      {"meets_expectation", Json{{"type", "boolean"}}},
      {"tolerance", described("The largest drift tolerance of the sites the model has.",
                              number())},
      {"tolerances", described("The drift tolerance of each drift check site: the calibrated "
                               "defaults for the cache dtype and the attention ops' precision "
                               "(kvcheck's float32 ops or a backend's 16-bit io), unless "
                               "the scenario's checks.tolerance (every site) or "
                               "checks.site_tolerances (one site) replaces them.",
                               site_map())},
      {"reference_mode",
       described("checks.reference as the run used it: \"auto\" resolved to full or sampled "
                 "(it stays \"auto\" only in an error result whose run died before that).",
                 enum_of(names_of(kReferenceModeNames)))},
      {"reference_sampled_requests",
       described("Sampled mode only: requests checked against the reference per epoch.",
                 integer(1))},
      {"reference_device",
       described("Where the float64 reference that judged the run ran (--reference-device; "
                 "\"both\" is cuda).",
                 enum_of(std::vector<std::string>{"host", "cuda"}))},
      {"checks_overlapped",
       described("Whether step s was checked while the engine ran step s + 1 (on a GPU unless "
                 "--serial-checks; never on the host device). The verdict is the same either way.",
                 Json{{"type", "boolean"}})},
      {"stopped_at_first_failure",
       described("Whether --fail-fast ended the run at its first failure before its workload "
                 "was done. The verdict and first_failure are what the whole run gives (every "
                 "step before the failing one was checked); epochs covers the steps that ran, "
                 "the last one cut short or the later ones left out.",
                 Json{{"type", "boolean"}})},
      {"reference_mode_reason",
       described("Only where checks.reference was \"auto\": why it became reference_mode.",
                 Json{{"type", "string"}})},
      {"reference_protection",
       described("GPU reference only: how its device memory is kept from the code under test.",
                 Json{{"type", "string"}})},
      {"reference_device_bytes",
       described("GPU reference only: the most device memory it held, in bytes.", integer(0))},
      {"reference_agreement",
       described("--reference-device both only: the largest relative L2 difference between the "
                 "GPU and CPU references' attention output rows (per token x head, with the "
                 "checks' floor) and logits (per token), over the rows compared.",
                 object({{"rows", integer(0)},
                         {"max_rel_diff", number()},
                         {"logit_rows", integer(0)},
                         {"max_logit_rel_diff", number()}}))},
      {"op_check", op_check_schema()},
      {"epochs", Json{{"type", "array"}, {"items", epoch_schema()}}},
      {"first_failure", Json{{"oneOf", Json::array({Json{{"type", "null"}}, failure_schema()})}}},
      {"coverage", coverage_schema()},
      {"coverage_gaps", coverage_gaps_schema()},
      {"backend", backend_schema()},
      {"error", error_schema()},
      {"seconds", number()},
  };
  Json body = object(std::move(props),
                     {"reference_sampled_requests", "reference_mode_reason",
                      "reference_protection", "reference_device_bytes", "reference_agreement",
                      "op_check", "backend", "error", "command_line", "settings",
                      "scenario_sha256", "started_at"});
  for (auto& [k, v] : body.items()) doc[k] = v;
  doc["$defs"] = Json{
      {"number", described("A number, or a non-finite one as a string.",
                           Json{{"anyOf", Json::array({Json{{"type", "number"}},
                                                       enum_of(std::vector<std::string>{
                                                           "nan", "inf", "-inf"})})}})}};
  return schema_text(doc);
}

}  // namespace kv
