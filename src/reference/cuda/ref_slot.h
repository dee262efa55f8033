// ref_slot.h — what the GPU reference keeps on the device: the weights of a layer, the parts of
// a request's history the hash covers, and a slot (one request's history).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "reference/cuda/ref_memory.h"
#include "scenario/scenario.h"

namespace kv::refgpu_impl {

struct LayerDev {
  LayerKind kind = LayerKind::attention;
  const float *wq = nullptr, *wk = nullptr, *wv = nullptr, *bv = nullptr, *wg = nullptr,
              *bg = nullptr, *wdkv = nullptr, *bdkv = nullptr, *wqn = nullptr, *wqr = nullptr,
              *wuk = nullptr, *wuv = nullptr, *wo = nullptr;
  float quant_scale = 0.0f;  // 0: no fp8 op (linear)
};

// A part of a slot the hash covers: rows appended per position, or a whole block (the state).
// The layers' parts are read by every step's attention and verified before every step; the
// attention outputs and final hidden states are read back only for positions a recomputed chunk
// (after a preemption) asks for again, and are verified when that happens.
struct Part {
  const char* what;
  int32_t layer;
  int64_t off, row_bytes, whole_bytes;  // whole_bytes > 0: hashed whole, else [0, kept) rows
  bool every_step = true;
};

// One request's history on the device. Live (`request` >= 0): rows [0, length) are the
// request's positions. Dormant (request -1, owner >= 0): the rows [0, kept) of a request that
// finished, or of the last epoch, kept for when the same tokens come again (every epoch replays
// the same requests): a live slot's rows [length, kept) are such rows not yet reused (reuse()).
struct Slot {
  int32_t request = -1;  // the live request; -1: none
  int32_t owner = -1;    // the request whose positions the rows hold
  int32_t length = 0;    // positions of the live request computed (or reused)
  int32_t kept = 0;      // rows written: [0, kept), length <= kept
  std::vector<int32_t> tokens;  // the tokens of [0, kept)
  // Models with linear layers: the position their recurrent states are at (`length` while the
  // slot computes; in a history taken up again, where they were left, at most `kept`), and the
  // snapshots of them (position, hash of the snapshot), one per region of the slot's snapshot
  // part, in position order.
  int32_t state_at = 0;
  std::vector<std::pair<int32_t, unsigned long long>> snapshots;
  // Kept rows [length, overwrite) that this run computes again (reuse() took their hash off).
  int32_t overwrite = 0;
  int64_t dormant_since = 0;  // when it last went dormant (a count of releases)
  DevMem mem;
  std::vector<unsigned long long> hashes;  // per Part, of what was last written ([0, kept))
};

}  // namespace kv::refgpu_impl
