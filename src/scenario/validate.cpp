// validate.cpp — cross-field validation of a scenario.
#include "scenario/validate.h"

#include <fmt/format.h>

namespace kv {
namespace {

constexpr int64_t kMaxRequestTokens = 65536;  // prompt + new tokens of one request

bool present(const Json& doc, const std::string& pointer) {
  return doc.contains(Json::json_pointer(pointer));
}

// "got 64" for a value the file sets, "got 64 (the default)" for one it leaves out.
std::string got(const Json& doc, const std::string& pointer, int64_t value) {
  return fmt::format("got {}{}", value, present(doc, pointer) ? "" : " (the default)");
}

// Of two fields in conflict, blame the one the user wrote; the first if both or neither.
std::string blame(const Json& doc, const std::string& first, const std::string& second) {
  return !present(doc, first) && present(doc, second) ? second : first;
}

void validate_model(const ModelSpec& m, const Json& doc) {
  for (std::size_t i = 0; i < m.layers.size(); ++i)
    if (m.layers[i] != LayerKind::attention)
      fail(child_pointer("/model/layers", i),
           fmt::format("layer kind \"{}\" is not supported yet by this build (supported: "
                       "attention)",
                       to_string(m.layers[i])));

  if (m.num_q_heads % m.num_kv_heads != 0) {
    const std::string p = blame(doc, "/model/num_kv_heads", "/model/num_q_heads");
    if (p == "/model/num_kv_heads")
      fail(p, fmt::format("{}, but num_q_heads = {} is not a multiple of it (each KV head serves "
                          "a whole group of query heads)",
                          got(doc, p, m.num_kv_heads), m.num_q_heads));
    fail(p, fmt::format("{}, expected a multiple of num_kv_heads = {}", got(doc, p, m.num_q_heads),
                        m.num_kv_heads));
  }
}

void validate_engine(const EngineSpec& e, const Json& doc) {
  const GraphSpec& g = e.cuda_graphs;
  const std::string sizes = "/engine/cuda_graphs/capture_sizes";
  for (std::size_t i = 0; i < g.capture_sizes.size(); ++i) {
    const int32_t size = g.capture_sizes[i];
    if (i > 0 && size <= g.capture_sizes[i - 1])
      fail(child_pointer(sizes, i),
           fmt::format("got {} after {}, expected ascending sizes with no repeats", size,
                       g.capture_sizes[i - 1]));
    if (size > e.max_running_requests)
      fail(child_pointer(sizes, i),
           fmt::format("capture size {} is above engine.max_running_requests = {}{} (a batch "
                       "never has more rows than that)",
                       size, e.max_running_requests,
                       present(doc, "/engine/max_running_requests") ? "" : " (the default)"));
  }
  if (g.mode == GraphMode::decode && g.capture_sizes.empty())
    fail(blame(doc, sizes, "/engine/cuda_graphs/mode"),
         "mode \"decode\" needs at least one capture size in engine.cuda_graphs.capture_sizes");
}

void validate_workload(const WorkloadSpec& w, const Json& doc) {
  const int64_t longest = int64_t{w.prompt_len.max} + w.new_tokens.max;
  if (longest > kMaxRequestTokens)
    fail(blame(doc, "/workload/new_tokens", "/workload/prompt_len"),
         fmt::format("the longest request (prompt {} + {} new tokens) has {} tokens, above the "
                     "limit of {}",
                     w.prompt_len.max, w.new_tokens.max, longest, kMaxRequestTokens));

  if (w.prefix_groups > 0 && w.shared_prefix_len > w.prompt_len.min)
    fail("/workload/shared_prefix_len",
         fmt::format("{}, but prompt_len.min = {}: every prompt starts with its group's shared "
                     "prefix, so the prefix must fit in the shortest prompt",
                     got(doc, "/workload/shared_prefix_len", w.shared_prefix_len),
                     w.prompt_len.min));
}

// The pool must hold at least the longest request on its own, or the scheduler could never run
// it, not even alone after preempting everything else.
void validate_capacity(const Scenario& s, const Json& doc) {
  const int64_t tokens = int64_t{s.workload.prompt_len.max} + s.workload.new_tokens.max;
  const int64_t needed = (tokens + s.cache.block_size - 1) / s.cache.block_size;
  const int64_t usable = int64_t{s.cache.num_blocks} - 1;  // block 0 is the null block
  if (usable < needed)
    fail("/cache/num_blocks",
         fmt::format("{}, but the longest request (prompt {} + {} new tokens) needs {} blocks of "
                     "{} plus the null block",
                     got(doc, "/cache/num_blocks", s.cache.num_blocks),
                     s.workload.prompt_len.max, s.workload.new_tokens.max, needed,
                     s.cache.block_size));
}

}  // namespace

void validate_scenario(const Scenario& s, const Json& doc) {
  validate_model(s.model, doc);
  validate_engine(s.engine, doc);
  validate_workload(s.workload, doc);
  validate_capacity(s, doc);
}

}  // namespace kv
