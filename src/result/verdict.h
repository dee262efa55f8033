// verdict.h — what a run of one scenario concluded.
#pragma once

namespace kv {

// error: the run itself failed inside a backend (a crash, an exit, an error status or a hang):
// never what a scenario expects.
enum class Verdict { clean, corrupt, error };

}  // namespace kv
