#include "check/op_inputs.h"

#include <algorithm>

namespace kv {

OpInputsReader::OpInputsReader(const Scenario& s, const ModelRunner& runner)
    : s_(s), runner_(runner) {}

void OpInputsReader::begin_epoch(int32_t num_requests) { read_upto_.assign(num_requests, 0); }

std::vector<ChunkKv> OpInputsReader::read(const StepPlan& plan,
                                          const std::function<bool(int32_t)>& checked) {
  std::vector<ChunkKv> out;
  for (size_t j = 0; j < plan.chunks.size(); ++j) {
    const ScheduledChunk& c = plan.chunks[j];
    if (!checked(c.request_id)) continue;
    int32_t& upto = read_upto_.at(static_cast<size_t>(c.request_id));
    const int32_t from = std::min(upto, c.start), to = c.start + c.num_tokens;
    ChunkKv kv{.chunk = j, .layers = {}, .unwritten_rows = false};
    for (int32_t i = 0; i < c.num_tokens; ++i)
      if (plan.slot_mapping[static_cast<size_t>(plan.chunk_first_row[j] + i)] < 0)
        kv.unwritten_rows = true;
    for (size_t l = 0; l < s_.model.layers.size(); ++l) {
      if (s_.model.layers[l] == LayerKind::linear) {
        kv.layers.emplace_back();
        continue;
      }
      kv.layers.push_back(runner_.read_kv_rows(l, plan.chunk_block_table(j), from, to));
    }
    upto = to;
    out.push_back(std::move(kv));
  }
  return out;
}

}  // namespace kv
