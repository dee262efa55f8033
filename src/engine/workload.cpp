// workload.cpp — make_workload: the draws, in a fixed order so a seed always means one workload.
//
// Order of draws: every group's prefix (group 0 first), then per request in id order: prompt
// length, new tokens, arrival step, then the prompt tokens after the shared prefix. Changing
// this order changes every scenario's workload, so it is part of the format.
#include "engine/workload.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "util/rng.h"

namespace kv {
namespace {

constexpr uint64_t kWorkloadSalt = 0x776f726b6c6f6164ull;  // keeps these draws apart from faults'

int32_t draw(Rng& rng, Range r) {
  return static_cast<int32_t>(rng.uniform_int(r.min, r.max));
}

void check_range(const char* name, Range r, int32_t lowest) {
  if (r.min < lowest || r.max < r.min) {
    throw std::invalid_argument(std::string("workload: bad ") + name + " range [" +
                                std::to_string(r.min) + ", " + std::to_string(r.max) + "]");
  }
}

}  // namespace

std::vector<Request> make_workload(const WorkloadSpec& spec, uint64_t seed, int32_t vocab_size) {
  if (vocab_size <= 0) throw std::invalid_argument("workload: vocab_size must be positive");
  if (spec.num_requests < 0 || spec.prefix_groups < 0 || spec.shared_prefix_len < 0) {
    throw std::invalid_argument("workload: negative count");
  }
  check_range("prompt_len", spec.prompt_len, 1);
  check_range("new_tokens", spec.new_tokens, 1);
  check_range("arrival_step", spec.arrival_step, 0);

  Rng rng(seed ^ kWorkloadSalt);
  const int32_t prefix_len = spec.prefix_groups > 0 ? spec.shared_prefix_len : 0;
  std::vector<std::vector<int32_t>> prefixes(spec.prefix_groups);
  for (auto& p : prefixes) {
    p.resize(prefix_len);
    for (auto& t : p) t = static_cast<int32_t>(rng.uniform_int(0, vocab_size - 1));
  }

  std::vector<Request> requests(spec.num_requests);
  for (int32_t i = 0; i < spec.num_requests; ++i) {
    Request& r = requests[i];
    r.id = i;
    const int32_t len = draw(rng, spec.prompt_len);
    r.max_new_tokens = draw(rng, spec.new_tokens);
    r.arrival_step = draw(rng, spec.arrival_step);
    r.prompt.resize(len);
    int32_t shared = 0;
    if (spec.prefix_groups > 0) {
      const auto& prefix = prefixes[i % spec.prefix_groups];
      shared = std::min(len, prefix_len);
      std::copy_n(prefix.begin(), shared, r.prompt.begin());
    }
    for (int32_t p = shared; p < len; ++p) {
      r.prompt[p] = static_cast<int32_t>(rng.uniform_int(0, vocab_size - 1));
    }
  }
  return requests;
}

}  // namespace kv
