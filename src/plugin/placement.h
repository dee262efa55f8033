// placement.h — which ops of a scenario run on the backend, and what the engine changes so that
// the backend's declared conventions hold.
//
// No silent fallback: an op the backend implements runs on it. If its capabilities cannot take
// the scenario (cache dtype, layout, head dim, block size, a convention kvcheck cannot bridge
// yet), that is "cannot run" naming the op and the capability, unless the user pinned the op to
// the built-in device (--backend-op OP=builtin) or allowed fallback (--allow-fallback); either way
// the run records why.
#pragma once

#include <string>
#include <vector>

#include "ops/op_table.h"  // abi_op_from_name, for --backend-op
#include "plugin/backend_device.h"
#include "scenario/scenario.h"

namespace kv {

struct PlacementRequest {
  std::vector<kvcheck_op> pinned_builtin;  // --backend-op OP=builtin
  bool allow_fallback = false;             // --allow-fallback
};

struct Placement {
  OpPlacement ops;
  std::vector<std::string> notes;  // "op: why it runs built-in", "engine: what was adapted"
};

// Decides the placement for `s` and adapts `s` to the backend's declared conventions (zeroing of
// new blocks, graphs it does not support). Throws BackendLoadError ("cannot run") naming the op
// and the missing capability.
Placement place_ops(const BackendLibrary& lib, const PlacementRequest& req, Scenario& s);

}  // namespace kv
