// failure.h — the first output of a run that failed a check, with where it came from. Plain data.
#pragma once

#include <cstdint>
#include <string>

#include "result/check_sites.h"

namespace kv {

// The first output that failed a check, with where it came from.
struct Failure {
  int32_t epoch = 0;     // 1-based
  int64_t step = 0;      // step index within the epoch, 0-based
  int32_t request = 0;   // request id (index in the workload)
  int32_t position = 0;  // token position within the request
  int32_t layer = -1;    // -1 when not layer-specific (lm_head / token checks)
  int32_t head = -1;
  CheckSite site = CheckSite::decode;  // the kind of row; its ops are site_info(site).ops
  std::string check;     // nonfinite, drift, token, epoch_agreement, op_drift
  double value = 0.0;    // the error (or NaN) that failed
  double tolerance = 0.0;
  bool padded_batch = false;  // the step ran as a padded graph replay
  std::string detail;    // one human line
};

}  // namespace kv
