// device_ops.h — the op vocabulary: every op a Device runs (device.h), by the one name that
// `kvcheck list`, failure lines and result files use. The attention and cache ops are the ones a
// backend can take over; the synthetic model's dense ops always run on the built-in device.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace kv {

enum class DeviceOp {
  write_kv,
  paged_decode,
  gather_kv,
  varlen_attention,
  merge_states,
  linear_attention,
  fill_blocks,
  quant_fp8,
  paged_prefill,
  embed,
  rms_norm,
  linear,
  argmax,
  convert_rows,
};
inline constexpr std::size_t kNumDeviceOps = 14;

enum class OpRole {
  attention_cache,  // attention and KV-cache ops: what a backend under test implements
  dense_model,      // the synthetic model around them: always kvcheck's own
};

struct DeviceOpInfo {
  DeviceOp op;
  std::string_view name;
  OpRole role;
  std::string_view does;  // one line
};

// In enum order: all_device_ops()[i].op == DeviceOp(i).
const std::vector<DeviceOpInfo>& all_device_ops();
const DeviceOpInfo& op_info(DeviceOp op);
std::string_view op_name(DeviceOp op);
std::optional<DeviceOp> find_device_op(std::string_view name);

}  // namespace kv
