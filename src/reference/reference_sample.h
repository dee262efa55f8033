// reference_sample.h — which requests the sampled reference checks in an epoch.
//
// In checks.reference "sampled" mode (scenario.h) only a sample of each epoch's requests is
// recomputed by the float64 reference. The sample must be reproducible from the result document
// alone (scenario seed, epoch, request count, sample size), differ from epoch to epoch so that
// several epochs cover more requests than one, and cost nothing to draw. It is:
//
//   the n requests with the smallest sample_key(seed, epoch, id), ties broken by the smaller id;
//   every request when n >= num_requests.
//
// sample_key chains splitmix64 over the seed, the epoch and the id: each request's key is an
// independent-looking 64-bit number, so the sample is a uniform draw without replacement.
#pragma once

#include <cstdint>
#include <vector>

namespace kv {

uint64_t sample_key(uint64_t seed, int32_t epoch, int32_t request_id);

// The ids (0 .. num_requests-1) checked against the reference in `epoch`, ascending. n >= 1.
std::vector<int32_t> sample_requests(uint64_t seed, int32_t epoch, int32_t num_requests,
                                     int32_t n);

}  // namespace kv
