// worker_reply.cpp — the names of WorkerReply on the pipe, written once.
#include "cli/worker_reply.h"

#include <array>
#include <stdexcept>
#include <utility>

namespace kv::cli {
namespace {

constexpr std::array<std::pair<WorkerReply, const char*>, 4> kNames{{
    {WorkerReply::done, "done"},
    {WorkerReply::op_status, "op_status"},
    {WorkerReply::cannot_run, "cannot_run"},
    {WorkerReply::internal_error, "internal_error"},
}};

}  // namespace

std::string worker_reply_text(WorkerReply reply, nlohmann::json body) {
  for (const auto& [r, name] : kNames)
    if (r == reply) body["reply"] = name;
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ParsedReply parse_worker_reply(const std::string& text) {
  try {
    nlohmann::json body = nlohmann::json::parse(text);
    const std::string name = body.at("reply").get<std::string>();
    for (const auto& [r, n] : kNames)
      if (name == n) return {r, std::move(body)};
    throw std::logic_error("unknown reply \"" + name + "\"");
  } catch (const nlohmann::json::exception& e) {
    throw std::logic_error(std::string("a worker's reply is not one: ") + e.what());
  }
}

}  // namespace kv::cli
