// reference_sample.cpp — the seeded sample of requests of the sampled reference mode.
#include "reference/reference_sample.h"

#include <algorithm>
#include <utility>

#include "util/rng.h"

namespace kv {

// The salt keeps the sample's stream apart from the workload's (Rng also starts from
// splitmix64 of the seed) so the sample is not correlated with the requests' lengths.
uint64_t sample_key(uint64_t seed, int32_t epoch, int32_t request_id) {
  uint64_t h = splitmix64(seed ^ 0x7265662d73616d70ull);  // "ref-samp"
  h = splitmix64(h ^ static_cast<uint32_t>(epoch));
  return splitmix64(h ^ static_cast<uint32_t>(request_id));
}

std::vector<int32_t> sample_requests(uint64_t seed, int32_t epoch, int32_t num_requests,
                                     int32_t n) {
  std::vector<int32_t> ids;
  if (n >= num_requests) {
    for (int32_t id = 0; id < num_requests; ++id) ids.push_back(id);
    return ids;
  }
  std::vector<std::pair<uint64_t, int32_t>> keyed;  // (key, id): pairs order ties by id
  keyed.reserve(static_cast<size_t>(num_requests));
  for (int32_t id = 0; id < num_requests; ++id) keyed.emplace_back(sample_key(seed, epoch, id), id);
  std::nth_element(keyed.begin(), keyed.begin() + n, keyed.end());
  for (int32_t i = 0; i < n; ++i) ids.push_back(keyed[static_cast<size_t>(i)].second);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace kv
