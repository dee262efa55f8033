// result_paths.h — where each scenario's result goes (--out DIR/<scenario name>.json), computed
// and checked before anything runs: a name too long for a file, a path too long for the OS or a
// folder that cannot be written fails in a second, not after the whole run.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kv::cli {

// The result file of a scenario: characters other than [A-Za-z0-9._-] in its name become '_',
// so a name can never escape the output folder.
std::string result_file_name(const std::string& scenario_name);

// Creates `out_dir` if need be and returns out_dir/result_file_name(name) for each name, in
// order, once it has checked that every one of them (and the temporary file it is written
// through, report/atomic_write.h) fits NAME_MAX and PATH_MAX, and that a file can be created in
// the folder. Throws WriteError, naming the path, otherwise.
std::vector<std::filesystem::path> prepare_result_files(const std::filesystem::path& out_dir,
                                                        const std::vector<std::string>& names);

}  // namespace kv::cli
