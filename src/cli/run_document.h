// run_document.h — `kvcheck run --json`'s stdout: one "kvcheck.run/1" document
// (report/run_schema.h) for any number of scenarios, streamed. The opening is written when the
// run starts, each result document as its scenario ends (a run of 10,000 scenarios never holds
// them all, and a log cut short still shows every finished one), the summary with the run's exit
// status when everything else is done. A run that stops early still closes it: stdout stays one
// JSON value, with whatever results came before.
#pragma once

#include <nlohmann/json.hpp>

namespace kv::cli {

class RunDocument {
 public:
  // `on` false (no --json): every call does nothing.
  explicit RunDocument(bool on);
  // Not closed (an exception left the run after the opening): closes it without a summary, so
  // that stdout still parses; the exit status then says the run failed.
  ~RunDocument();
  RunDocument(const RunDocument&) = delete;
  RunDocument& operator=(const RunDocument&) = delete;

  void add(const nlohmann::json& result);  // a result document, written now
  void close(const nlohmann::json& summary);  // the summary, written now; once

 private:
  bool open_;
  bool added_ = false;
};

}  // namespace kv::cli
