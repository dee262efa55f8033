// to_string.cpp — the scenario enums as they are spelt in scenario files (enum_names.h).
#include "scenario/enum_names.h"

namespace kv {
namespace {

template <class E, std::size_t N>
const char* name_of(const std::array<EnumName<E>, N>& table, E value) {
  return name_in(table, value).data();
}

}  // namespace

const char* to_string(LayerKind k) { return name_of(kLayerKindNames, k); }
const char* to_string(DType t) { return name_of(kCacheDTypeNames, t); }
const char* to_string(KvLayout l) { return name_of(kKvLayoutNames, l); }
const char* to_string(PoolKind p) { return name_of(kPoolKindNames, p); }
const char* to_string(GraphMode m) { return name_of(kGraphModeNames, m); }
const char* to_string(DecodeSplits d) { return name_of(kDecodeSplitsNames, d); }
const char* to_string(PoisonPattern p) { return name_of(kPoisonPatternNames, p); }
const char* to_string(Expectation e) { return name_of(kExpectationNames, e); }
const char* to_string(ReferenceMode m) { return name_of(kReferenceModeNames, m); }

}  // namespace kv
