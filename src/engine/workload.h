// workload.h — the deterministic request list a scenario's WorkloadSpec describes.
//
// The engine calls make_workload once per epoch with the same spec and seed, so every epoch
// replays exactly the same requests on a cache that still holds the previous epoch's blocks.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/request.h"
#include "scenario/scenario.h"

namespace kv {

// Requests 0..num_requests-1, in id order, all waiting. Same spec + seed + vocab: same requests,
// on every platform (the draws use kv::Rng, not std distributions).
//  - prompt length uniform in spec.prompt_len, new tokens uniform in spec.new_tokens, arrival
//    step uniform in spec.arrival_step, prompt tokens uniform in [0, vocab_size);
//  - with prefix_groups > 0, request i belongs to group i % prefix_groups and its first
//    min(prompt length, shared_prefix_len) tokens are the group's prefix, drawn once per group.
std::vector<Request> make_workload(const WorkloadSpec& spec, uint64_t seed, int32_t vocab_size);

}  // namespace kv
