// enum_names.h — the one table of spellings for every enum a scenario can name.
//
// The parser reads these spellings, to_string() writes them, the generated JSON Schema and docs'
// table list them and the CLI's validators (cli/name_option.h) accept them, so a spelling is
// defined in exactly one place. A spelling the format has since renamed is in the old-name tables
// at the end: still read, with a deprecation warning (old_spellings.h).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/scenario.h"

namespace kv {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

inline constexpr std::array<EnumName<LayerKind>, 3> kLayerKindNames{{
    {LayerKind::attention, "attention"},
    {LayerKind::mla, "mla"},
    {LayerKind::linear, "linear"},
}};

// Every DType can store the cache; fp8_e4m3 stores value / scale (CacheSpec::k_scale, v_scale).
inline constexpr std::array<EnumName<DType>, 4> kCacheDTypeNames{{
    {DType::f32, "f32"},
    {DType::f16, "f16"},
    {DType::bf16, "bf16"},
    {DType::fp8_e4m3, "fp8_e4m3"},
}};

// As the ABI names them (include/kvcheck/backend.h: KVCHECK_LAYOUT_KV_SEPARATE, ..._INTERLEAVED).
inline constexpr std::array<EnumName<KvLayout>, 2> kKvLayoutNames{{
    {KvLayout::kv_separate, "kv_separate"},
    {KvLayout::kv_interleaved, "kv_interleaved"},
}};

inline constexpr std::array<EnumName<PoolKind>, 2> kPoolKindNames{{
    {PoolKind::per_layer, "per_layer"},
    {PoolKind::hybrid, "hybrid"},
}};

inline constexpr std::array<EnumName<DecodeSplits>, 2> kDecodeSplitsNames{{
    {DecodeSplits::per_row, "per_row"},
    {DecodeSplits::uniform, "uniform"},
}};

inline constexpr std::array<EnumName<GraphMode>, 2> kGraphModeNames{{
    {GraphMode::off, "off"},
    {GraphMode::decode, "decode"},
}};

inline constexpr std::array<EnumName<PoisonPattern>, 4> kPoisonPatternNames{{
    {PoisonPattern::none, "none"},
    {PoisonPattern::nan, "nan"},
    {PoisonPattern::inf, "inf"},
    {PoisonPattern::random_bits, "random"},
}};

inline constexpr std::array<EnumName<Expectation>, 2> kExpectationNames{{
    {Expectation::clean, "clean"},
    {Expectation::corrupt, "corrupt"},
}};

inline constexpr std::array<EnumName<ReferenceMode>, 3> kReferenceModeNames{{
    {ReferenceMode::full, "full"},
    {ReferenceMode::sampled, "sampled"},
    {ReferenceMode::automatic, "auto"},
}};

// ---- renamed spellings ----

// A spelling the format has renamed: a file may still use it, and it reads as `value` (whose name
// is the one in the table above), with a deprecation warning.
template <class E>
struct OldName {
  std::string_view old_name;
  E value;
};

inline constexpr std::array<OldName<KvLayout>, 2> kKvLayoutOldNames{{
    {"plain", KvLayout::kv_separate},
    {"interleaved", KvLayout::kv_interleaved},
}};

inline constexpr std::array<OldName<PoolKind>, 1> kPoolKindOldNames{{
    {"separate", PoolKind::per_layer},
}};

// ---- lookups ----

// The names are literals: data() is NUL-terminated.
template <class E, std::size_t N>
std::string_view name_in(const std::array<EnumName<E>, N>& table, E value) {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  return "?";
}

template <class E, std::size_t N>
std::optional<E> enum_from_name(const std::array<EnumName<E>, N>& table, std::string_view name) {
  for (const auto& e : table)
    if (e.name == name) return e.value;
  return std::nullopt;
}

template <class E, std::size_t N>
std::vector<std::string> enum_names(const std::array<EnumName<E>, N>& table) {
  std::vector<std::string> out;
  for (const auto& e : table) out.emplace_back(e.name);
  return out;
}

}  // namespace kv
