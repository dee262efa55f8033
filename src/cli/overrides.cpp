// overrides.cpp — command-line overrides of a parsed scenario.
#include "cli/overrides.h"


namespace kv::cli {

std::optional<std::string> check_reference_overrides(const Overrides& o) {
  if (o.sampled_requests && o.reference == ReferenceMode::full)
    return "--sampled-requests: given with --reference full, which checks every request against "
           "the reference, so there is no sample to size; drop one of them (--sampled-requests "
           "alone implies --reference sampled)";
  return std::nullopt;
}

void apply_overrides(const Overrides& o, Scenario& s) {
  if (o.seed) s.seed = *o.seed;
  if (o.epochs) s.workload.epochs = *o.epochs;
  if (o.expect) s.expect = *o.expect;
  if (o.zero_init_outputs) s.engine.zero_init_outputs = true;
  if (o.reference) s.checks.reference = *o.reference;
  if (o.sampled_requests) {
    // The sample's size; "auto" keeps choosing (the size is its fallback's).
    if (s.checks.reference != ReferenceMode::automatic) s.checks.reference = ReferenceMode::sampled;
    s.checks.sampled_requests = *o.sampled_requests;
  }
  if (o.regressions) s.regressions = *o.regressions;
}

}  // namespace kv::cli
