// graph_inputs.cpp — the one list of graph inputs: buffer, capacity, and the plan field it holds.
#include "engine/graph_inputs.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace kv {
namespace {

// visit(buffer, capacity in elements, field) for each input, in allocation order; field(plan)
// gives the std::vector the buffer holds.
template <class Inputs, class Visit>
void each_input(Inputs& in, size_t rows, size_t table_stride, Visit&& visit) {
  auto field = [](auto member) {
    return [member](const StepPlan& p) -> const auto& { return p.*member; };
  };
  visit(in.tokens, rows, field(&StepPlan::tokens));
  visit(in.positions, rows, field(&StepPlan::positions));
  visit(in.slots, rows, field(&StepPlan::slot_mapping));
  visit(in.num_real_rows, 1, [](const StepPlan& p) { return std::vector<int32_t>{p.num_rows}; });
  visit(in.decode_table, rows * table_stride, field(&StepPlan::decode_block_table));
  visit(in.decode_seq_lens, rows, field(&StepPlan::decode_seq_lens));
  visit(in.prefill_q_starts, rows + 1, field(&StepPlan::prefill_q_starts));
  visit(in.context_starts, rows + 1, field(&StepPlan::context_starts));
  visit(in.prefill_ctx_lens, rows, field(&StepPlan::prefill_ctx_lens));
  visit(in.prefill_table, rows * table_stride, field(&StepPlan::prefill_block_table));
  visit(in.linear_starts, rows + 1, field(&StepPlan::linear_seq_starts));
  visit(in.linear_blocks, rows, field(&StepPlan::linear_state_blocks));
  visit(in.linear_has_state, rows, field(&StepPlan::linear_has_state));
}

}  // namespace

GraphInputs::GraphInputs(Device& dev, int32_t max_rows, int32_t block_table_stride) {
  each_input(*this, static_cast<size_t>(max_rows), static_cast<size_t>(block_table_stride),
             [&dev](DeviceBuffer& b, size_t count, auto field) {
               using Vec = std::decay_t<decltype(field(std::declval<const StepPlan&>()))>;
               b = DeviceBuffer(dev, std::max<size_t>(count, 1) * sizeof(typename Vec::value_type));
             });
}

void GraphInputs::upload(const StepPlan& p) const {
  each_input(*this, 0, 0, [&p](const DeviceBuffer& b, size_t, auto field) { b.upload(field(p)); });
}

}  // namespace kv
