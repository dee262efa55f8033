// worker_reply.h — what a worker process says back to kvcheck when it finishes (plugin/worker.h
// carries the text): one enum inside the process, its names only on the pipe. A reply is a JSON
// object {"reply": NAME, ...body}; what the body holds depends on the reply (run_scenarios.cpp,
// plugin_worker.cpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kv::cli {

enum class WorkerReply {
  done,            // the work's result
  op_status,       // a backend op returned an error status (or the device failed after one)
  cannot_run,      // the work could not be carried out here (said on stderr, or in "message")
  internal_error,  // an invariant of kvcheck's own broke ("message")
};

// The reply as the worker sends it (never throws: text that cannot be UTF-8 is replaced).
std::string worker_reply_text(WorkerReply reply, nlohmann::json body = nlohmann::json::object());

struct ParsedReply {
  WorkerReply reply;
  nlohmann::json body;  // the object, "reply" included
};

// The parent's reading of it; throws std::logic_error for text that is not a reply (the worker
// is kvcheck's own code: that is a kvcheck bug).
ParsedReply parse_worker_reply(const std::string& text);

}  // namespace kv::cli
