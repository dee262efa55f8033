// backend_cli.h — what the CLI tests of --backend share: the plugins they load.
#pragma once

#include <string>

namespace kv::test {

// kvcheck's own host ops behind the plugin ABI.
inline const std::string kHostPlugin = KVCHECK_HOST_BACKEND;

// One of the misbehaving plugins of tests/plugins (KIND_<kind>).
inline std::string test_plugin(const std::string& kind) {
  return std::string(KVCHECK_TEST_PLUGIN_DIR) + "/libkvtest_plugin_" + kind + ".so";
}

}  // namespace kv::test
