// result_paths.h — where each run's result goes, computed and checked before anything runs:
// --out DIR/[<entry>/]<scenario path>[.<backend>][.seed<N>][.repeat<K>][.clean].json, where
// <scenario path> is the scenario file's path relative to the folder all of the run's files
// share, without ".json", and <entry> a suite entry's id (cli/suite_file.h). Two runs never share a file: two scenarios of one `name` in different files, one file
// at several seeds, or under two backends each get their own (and were one path still to repeat,
// the run is refused before it starts). A name too long for a file, a path too long for the OS or
// a folder that cannot be written fails in a second, not after the whole run.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kv::cli {

// What names one run's result.
struct ResultKey {
  std::string scenario_path{};  // the scenario file, as given or found in a folder
  std::string backend_path{};  // the plugin the run goes through; empty: the built-in device
  std::string variant{};       // ".seed3", ".repeat2", ".clean" ... in that order
  std::string entry{};         // the suite entry's id: its results go under a folder of it
  // In a suite: the file's path relative to the suite file, used instead of the shared folder's
  // (so one run's result has the same name whatever else the run selected).
  std::string suite_relative{};
};

// A plugin's short name for file names: its file name without "lib", "kvcheck_backend_" and the
// ".so" suffixes ("libkvcheck_backend_flashinfer.so" -> "flashinfer").
std::string backend_short_name(const std::string& library_path);

// The result file of each key, relative to the output folder, in order. Characters other than
// [A-Za-z0-9._-] in any part become '_', so no result can escape the output folder.
std::vector<std::filesystem::path> result_relative_paths(const std::vector<ResultKey>& keys);

// The first path that two keys share, as "A and B would both write F", if any.
std::optional<std::string> result_collision(const std::vector<ResultKey>& keys,
                                            const std::vector<std::filesystem::path>& relative);

// Creates `out_dir` if need be and returns out_dir/relative for each path, in order, once it
// has checked that every one of them (and the temporary file it is written through,
// report/atomic_write.h) fits NAME_MAX and PATH_MAX, and that a file can be created in the
// folder. Subfolders are made as their first result is written. Throws WriteError, naming the
// path, otherwise.
std::vector<std::filesystem::path> prepare_result_files(
    const std::filesystem::path& out_dir, const std::vector<std::filesystem::path>& relative);

}  // namespace kv::cli
