#include "report/version.h"

#include <fmt/format.h>

namespace kv {

std::string describe(const BuildIdentity& id) {
  const std::string commit = std::string(id.commit).substr(0, 12);
  std::string out = fmt::format("kvcheck {} (commit {}{}; {}", id.version, commit,
                                id.dirty ? ", modified" : "", id.build_type);
  if (*id.cuda_version) out += fmt::format("; CUDA {} sm {}", id.cuda_version, id.cuda_architectures);
  return out + ")";
}

}  // namespace kv
