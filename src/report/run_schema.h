// run_schema.h — the document `kvcheck run --json` prints, "kvcheck.run/1": the result document
// of each scenario as it ran, then the run's summary (the counts, the problem lines, the --baseline
// comparison and the exit status). `kvcheck schema run` prints its JSON Schema;
// scenarios/schema/run.schema.json is the committed copy, and a test keeps the two equal.
#pragma once

#include <string>

namespace kv {

// The document's "schema" field; a change of its shape that breaks a reader is a new version.
inline constexpr const char* kRunSchema = "kvcheck.run/1";

// The whole schema as committed (schema_text layout), ending in a newline. Its results are
// result documents: it refers to result.schema.json, the file beside it, by relative URI.
std::string run_schema_text();

}  // namespace kv
