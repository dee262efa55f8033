// device.cpp — what every built-in device shares: the built-in decode planner.
#include "device/device.h"

#include <vector>

#include "kernels/decode_splits.h"

namespace kv {

void Device::paged_decode_plan(const DecodePlanArgs& a) {
  const std::vector<int32_t> lens(a.seq_lens_host, a.seq_lens_host + a.num_rows);
  const std::vector<int32_t> plan =
      plan_decode_splits_for(a.cache_dtype, lens, a.block_size, a.max_splits, a.uniform_splits);
  const size_t bytes = plan.size() * sizeof(int32_t);
  if (bytes > a.plan_bytes) throw DeviceError("decode plan larger than its buffer");
  upload(a.plan, plan.data(), bytes);
}

size_t Device::decode_plan_bytes(const DecodePlanArgs& shape) const {
  return kv::decode_plan_bytes(shape.num_rows);
}

size_t Device::decode_workspace_bytes(const DecodePlanArgs& s) const {
  return kv::decode_workspace_bytes(s.num_rows, s.num_q_heads, s.v_dim, s.max_splits);
}

}  // namespace kv
