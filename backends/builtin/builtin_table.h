// builtin_table.h — the op table of a plugin over kvcheck's own ops, written once for the three
// that have one (host_backend.cpp, cuda_backend.cu, tests/mutants/mutant_backend.cpp): each ABI
// entry converts its args into kvcheck's descriptor (from_abi, src/backend/abi_convert.h) and
// hands it to the plugin's op function; the op's name in messages is the op table's
// (ops/op_table.h). paged_prefill is left out: kvcheck runs its gather -> varlen -> merge chain.
//
// A plugin describes itself as a type Ops with
//   kName, kRunsOn, kElsewhere     its name, device type and where to look on the other one;
//   version(), self()              the table's version string and self pointer;
//   run(op, self, args, stream, err, err_size, body)
//                                  runs body(args, stream) -> "" or why; no exception leaves it
//                                  (HostRun below for a plugin on the host);
//   write_kv, gather_kv, varlen_attention, merge_states, linear_attention, fill_blocks, quant_fp8
//                                  op functions over the descriptor, (desc) or (desc, stream),
//                                  returning void or why they failed ("" none): the functions
//                                  of those names in one namespace (KV_BUILTIN_OP_FUNCTIONS);
//   paged_decode(desc, lse, stream)   the decode, lse its optional output (nullptr: not asked);
//   store_plan(plan, desc, stream)    puts the built-in planner's plan into desc.plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/abi_convert.h"
#include "backends/builtin/builtin_plugin.h"
#include "kvcheck/backend.h"

// Inside an Ops type: its op functions are the functions of the same names in namespace `ns`
// (kv::host, kv::cuda, the mutants').
#define KV_BUILTIN_OP_FUNCTIONS(ns)                                                                \
  static constexpr auto write_kv = ns::write_kv;                                                   \
  static constexpr auto gather_kv = ns::gather_kv;                                                 \
  static constexpr auto varlen_attention = ns::varlen_attention;                                   \
  static constexpr auto merge_states = ns::merge_states;                                           \
  static constexpr auto linear_attention = ns::linear_attention;                                   \
  static constexpr auto fill_blocks = ns::fill_blocks;                                             \
  static constexpr auto quant_fp8 = ns::quant_fp8;

namespace kv::builtin_plugin {

// Ops::run of a plugin on the host: run_op's guard; the stream (NULL there) is passed on.
struct HostRun {
  template <class Args, class Body>
  static int32_t run(const char* op, void*, const Args* a, void* stream, char* err,
                     size_t err_size, Body body) {
    return run_op(op, a, err, err_size, [&](const Args& in) { return body(in, stream); });
  }
};

// An op function's descriptor type, and the call of it with the ABI's stream (cast to the
// function's stream type): "" or why it failed.
template <class Fn>
struct OpFunction;

template <class R, class Desc>
struct OpFunction<R (*)(const Desc&)> {
  using Descriptor = Desc;
  static std::string call(R (*fn)(const Desc&), const Desc& d, void*) {
    if constexpr (std::is_void_v<R>) {
      fn(d);
      return "";
    } else {
      return std::string(fn(d));
    }
  }
};

template <class R, class Desc, class Stream>
struct OpFunction<R (*)(const Desc&, Stream)> {
  using Descriptor = Desc;
  static std::string call(R (*fn)(const Desc&, Stream), const Desc& d, void* stream) {
    if constexpr (std::is_void_v<R>) {
      fn(d, static_cast<Stream>(stream));
      return "";
    } else {
      return std::string(fn(d, static_cast<Stream>(stream)));
    }
  }
};

// The ABI entry of op `Op`, whose function is Fn: its args converted and handed over.
template <class Ops, kvcheck_op Op, auto Fn, class Args>
int32_t convert_entry(void* self, const Args* a, void* stream, char* err, size_t err_size) {
  using F = OpFunction<decltype(Fn)>;
  return Ops::run(backend::op_name(Op), self, a, stream, err, err_size,
                  [](const Args& in, void* s) {
                    typename F::Descriptor d;
                    const std::string why = backend::from_abi(in, &d);
                    return why.empty() ? F::call(Fn, d, s) : why;
                  });
}

// paged_decode: the plan and the workspace are the ones paged_decode_plan and workspace_bytes
// gave (the built-in decode reads its split plan and keeps its split states there).
template <class Ops>
int32_t decode_entry(void* self, const kvcheck_paged_decode_args* a, void* stream, char* err,
                     size_t err_size) {
  return Ops::run(backend::op_name(KVCHECK_OP_PAGED_DECODE), self, a, stream, err, err_size,
                  [](const kvcheck_paged_decode_args& in, void* s) {
    PagedDecodeArgs d;
    float* lse = nullptr;
    const std::string why = backend::from_abi(in, &d, &lse);
    if (!why.empty()) return why;
    const std::string op = backend::op_name(KVCHECK_OP_PAGED_DECODE);
    if (d.num_rows > 0 && d.split_meta == nullptr)
      return op + ": plan: absent; " + Ops::kName +
             " reads the split plan that paged_decode_plan wrote there";
    if (d.num_rows > 0 && d.partial_out == nullptr)
      return op + ": workspace: absent; " + Ops::kName +
             " needs workspace_bytes(KVCHECK_OP_PAGED_DECODE) bytes";
    return std::string(Ops::paged_decode(d, lse, s));
  });
}

// paged_decode_plan: the built-in planner's plan, stored by the plugin.
template <class Ops>
int32_t plan_entry(void* self, const kvcheck_decode_plan_args* a, void* stream, char* err,
                   size_t err_size) {
  return Ops::run("paged_decode_plan", self, a, stream, err, err_size,
                  [](const kvcheck_decode_plan_args& in, void* s) {
    DecodePlanArgs d;
    std::string why;
    const std::vector<int32_t> plan = builtin_plan(in, &d, &why);
    return why.empty() ? std::string(Ops::store_plan(plan, d, s)) : why;
  });
}

template <class Ops>
kvcheck_backend op_table() {
  static const std::string version = Ops::version();
  kvcheck_backend b = builtin_table(Ops::kName, version.c_str(), Ops::self());
  b.write_kv = convert_entry<Ops, KVCHECK_OP_WRITE_KV, Ops::write_kv>;
  b.paged_decode = decode_entry<Ops>;
  b.gather_kv = convert_entry<Ops, KVCHECK_OP_GATHER_KV, Ops::gather_kv>;
  b.varlen_attention = convert_entry<Ops, KVCHECK_OP_VARLEN_ATTENTION, Ops::varlen_attention>;
  b.merge_states = convert_entry<Ops, KVCHECK_OP_MERGE_STATES, Ops::merge_states>;
  b.linear_attention = convert_entry<Ops, KVCHECK_OP_LINEAR_ATTENTION, Ops::linear_attention>;
  b.fill_blocks = convert_entry<Ops, KVCHECK_OP_FILL_BLOCKS, Ops::fill_blocks>;
  b.quant_fp8 = convert_entry<Ops, KVCHECK_OP_QUANT_FP8, Ops::quant_fp8>;
  b.paged_prefill = nullptr;
  b.paged_decode_plan = plan_entry<Ops>;
  return b;
}

// kvcheck_backend_init's body for such a plugin: the refusal (init_refusal), else its table
// (built once, at the first init that is not refused).
template <class Ops>
const kvcheck_backend* init(uint32_t abi_version, const kvcheck_host* host, char* err,
                            size_t err_size) {
  try {
    const std::string why =
        init_refusal(Ops::kName, abi_version, host, Ops::kRunsOn, Ops::kElsewhere);
    if (!why.empty()) {
      put_error(err, err_size, why);
      return nullptr;
    }
    static const kvcheck_backend table = op_table<Ops>();
    return &table;
  } catch (...) {
    put_error(err, err_size, std::string(Ops::kName) + ": init failed");
    return nullptr;
  }
}

}  // namespace kv::builtin_plugin
