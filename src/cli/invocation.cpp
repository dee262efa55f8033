#include "cli/invocation.h"

#include <ctime>

namespace kv::cli {
namespace {

std::vector<std::string>& stored() {
  static std::vector<std::string> line;
  return line;
}

}  // namespace

void set_command_line(int argc, const char* const* argv) {
  stored().assign(argv, argv + argc);
}

const std::vector<std::string>& command_line() { return stored(); }

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

}  // namespace kv::cli
