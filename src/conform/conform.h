// conform.h — `kvcheck conform`: each op a backend plugin implements, against kvcheck's built-in
// host op on identical random inputs, over a grid of awkward shapes its declared capabilities
// take (block size 1, odd batches, empty and single-token sequences, padded rows).
//
// The plugin runs on its device (a host plugin on kDLCPU, a CUDA plugin on kDLCUDA): each case's
// inputs are built on the host, and the plugin gets copies in its device's memory
// (conform_staging.h). Outputs are poisoned (NaN) before each call on both sides; the comparison
// is exact where the op is defined exactly (write_kv, gather_kv, fill_blocks, quant_fp8) and a
// relative L2 error per (row, head) with a tolerance for the attention ops (ConformOptions says
// why). A failure names the op and its first failing case, so a backend author knows where to
// look. A fault of the device itself (a CUDA error after the plugin's launch) fails the op it
// happened in and stops the run: the ops after it are listed as not run.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kvcheck/backend.h"
#include "plugin/progress_record.h"

namespace kv {
class Device;
}

namespace kv::conform {

struct ConformOptions {
  uint64_t seed = 1;
  // Relative L2 tolerance of the attention ops (paged_decode, varlen_attention, merge_states,
  // linear_attention), per (row, head), and the relative error of their lse. Both sides read
  // the same f32 / bf16 / fp8 elements and compute in float32; they differ only in the order of
  // accumulation (the built-in splits a row into KV chunks and merges their states, a backend
  // may stream it in one pass), which moves a result by a few ulps: ~4e-7 relative over these
  // lengths. 1e-5 leaves a wide margin, while a dropped or doubled token (1/seq_len of the
  // weight) is far above it. A backend that computes P.V in bf16 needs --tolerance (~1e-2).
  double attention_tolerance = 1e-5;
  // Where each op's check marks itself (its op name) while it runs, so that the parent of a
  // worker that dies or hangs in it knows which op did (plugin/progress_record.h); none: unmarked.
  ProgressRecord* record = nullptr;
  // Ops a previous worker died or hung in: not run again, reported as failing with this text.
  std::map<kvcheck_op, std::string> failed_before;
};

// One op's outcome. An op conform does not cover yet has covered = false and counts as passing.
struct OpReport {
  std::string op;
  bool covered = true;
  int cases = 0;
  int passed = 0;
  double worst_error = 0.0;   // exact ops: the largest absolute difference; else relative L2
  std::string first_failure;  // "case: why", or "" when every case passed
  std::string note;           // what was left out (e.g. a dtype the caps lack)
  bool ok() const { return passed == cases; }
};

struct ConformReport {
  std::string backend_name, backend_version;
  uint64_t seed = 0;  // of the random inputs: the same seed reproduces every case
  double attention_tolerance = 0.0;
  std::vector<OpReport> ops;  // the ops the backend implements, in ABI order
  bool all_passed() const;
};

// Runs every op the table implements, the plugin's buffers on `device` (host memory, or the GPU
// for a plugin loaded for kDLCUDA: `dl` says which). Never throws for a backend's misbehaviour
// (an error status is a failing case); throws std::invalid_argument for an empty table.
ConformReport run_conform(const kvcheck_backend& backend, const ConformOptions& options,
                          Device& device, DLDevice dl);
// A host plugin (kDLCPU) on a host device.
ConformReport run_conform(const kvcheck_backend& backend, const ConformOptions& options);

// The aligned table: op | cases | passed | worst error | first failing case.
void print_conform(std::ostream& os, const ConformReport& r);
nlohmann::json conform_document(const ConformReport& r);  // "kvcheck.conform/1"
std::string conform_json(const ConformReport& r);  // the document as text (--json)
// conform_document read back (a worker sends its report this way); throws
// nlohmann::json::exception when it is not one.
ConformReport conform_report_from_json(const nlohmann::json& doc);

}  // namespace kv::conform
