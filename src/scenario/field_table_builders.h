// field_table_builders.h — how fields.cpp writes its table: one builder call per key makes both
// the reader of that key and its FieldInfo from the same bounds, choices and member, so the
// reader and what field_table.h reports cannot differ. Used by fields.cpp only.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "scenario/field_table.h"
#include "scenario/json_value.h"

namespace kv::field_table {

template <class T>
using Reader = std::function<void(const Json& value, const std::string& pointer, T& out)>;
// Where an object of type T sits in a Scenario.
template <class T>
using Getter = std::function<const T&(const Scenario&)>;

template <class T>
struct Field {
  std::string_view key{};
  Reader<T> read{};
  std::function<Json(const T&)> value_of{};  // leaves: the value as a file spells it
  std::vector<ValueForm> forms{};
  std::string_view doc{};
  bool required = false;
  bool has_default = true;
  bool default_in_schema = true;
  std::string_view default_note{};
  std::vector<RenamedChoice> renamed{};
  // Nested objects: add the object's own fields under `pointer`.
  std::function<void(const std::string& pointer, const Getter<T>& get,
                     std::vector<FieldInfo>& out)>
      add_children{};
};

template <class T>
using Fields = std::vector<Field<T>>;

// ---- the table's walks: reading a document, listing the fields ----

template <class T>
void read_object(const Fields<T>& fields, const Json& v, const std::string& pointer, T& out) {
  require_object(v, pointer);
  // Not a structured binding: clang 14 (the fuzzer's compiler) cannot capture one in a lambda.
  for (const auto& item : v.items()) {
    const std::string& key = item.key();
    const Json& value = item.value();
    const std::string child = child_pointer(pointer, key);
    const auto f = std::find_if(fields.begin(), fields.end(),
                                [&](const Field<T>& f) { return f.key == key; });
    if (f == fields.end()) {
      std::vector<std::string> keys;
      for (const auto& known : fields) keys.emplace_back(known.key);
      if (auto best = closest_name(key, keys))
        fail(child, "unknown key; did you mean \"" + *best + "\"?");
      fail(child, "unknown key; the keys here are " + quoted_list(keys));
    }
    f->read(value, child, out);
  }
}

template <class T>
void add_fields(const Fields<T>& fields, const std::string& pointer, const Getter<T>& get,
                std::vector<FieldInfo>& out) {
  for (const auto& f : fields) {
    FieldInfo info;
    info.pointer = child_pointer(pointer, f.key);
    info.forms = f.forms;
    info.required = f.required;
    info.default_in_schema = f.default_in_schema;
    info.default_note = f.default_note;
    info.doc = f.doc;
    info.renamed = f.renamed;
    if (f.value_of) {
      info.value_in = [get, value_of = f.value_of](const Scenario& s) { return value_of(get(s)); };
      if (f.has_default) info.default_value = info.value_in(Scenario{});
    }
    const std::string child = info.pointer;  // `out` grows below: no reference into it
    out.push_back(std::move(info));
    if (f.add_children) f.add_children(child, get, out);
  }
}

// ---- forms ----

inline ValueForm integer_form(int64_t lo, int64_t hi) {
  ValueForm f;
  f.minimum = lo;
  f.maximum = hi;
  return f;
}

inline ValueForm choice_form(std::vector<std::string> names) {
  ValueForm f;
  f.kind = ValueForm::Kind::choice;
  f.choices = std::move(names);
  return f;
}

inline ValueForm array_form(ValueForm items, std::size_t min_items, std::size_t max_items,
                            bool unique) {
  ValueForm f;
  f.kind = ValueForm::Kind::array;
  f.items = std::make_shared<const ValueForm>(std::move(items));
  f.min_items = min_items;
  if (max_items != SIZE_MAX) f.max_items = max_items;
  f.unique_items = unique;
  return f;
}

inline ValueForm plain_form(ValueForm::Kind kind) {
  ValueForm f;
  f.kind = kind;
  return f;
}

// ---- modifiers ----

// The default is no value to write down; `note` says what a file that leaves the key out gets.
template <class T>
Field<T> no_default(Field<T> f, std::string_view note) {
  f.has_default = false;
  f.default_note = note;
  return f;
}

// The default holds only with another field's value, said by `note`: the schema leaves it out.
template <class T>
Field<T> default_only(Field<T> f, std::string_view note) {
  f.default_in_schema = false;
  f.default_note = note;
  return f;
}

// ---- field builders: one line of the table each ----

// A key held in one member of T: `read(value, pointer)` makes the member from the file's value,
// which the file spells as the member's own JSON value.
template <class T, class M, class Read>
Field<T> member_field(std::string_view key, M T::*member, Read read, ValueForm form,
                      std::string_view doc) {
  return {.key = key,
          .read = [=](const Json& v, const std::string& p, T& out) { out.*member = read(v, p); },
          .value_of = [=](const T& t) { return Json(t.*member); },
          .forms = {std::move(form)},
          .doc = doc};
}

template <class T>
Field<T> integer(std::string_view key, int32_t T::*member, int32_t lo, int32_t hi,
                 std::string_view doc, std::string_view why = {}) {
  const auto read = [=](const Json& v, const std::string& p) {
    return read_int(v, p, lo, hi, why);
  };
  return member_field(key, member, read, integer_form(lo, hi), doc);
}

template <class T>
Field<T> seed(std::string_view key, uint64_t T::*member, std::string_view doc) {
  ValueForm form;
  form.minimum = 0;
  form.maximum = std::numeric_limits<uint64_t>::max();
  form.note = "64-bit";
  return member_field(key, member, read_uint64, form, doc);
}

// A dequantisation scale: see read_positive_float().
template <class T>
Field<T> scale(std::string_view key, float T::*member, std::string_view doc) {
  ValueForm form = plain_form(ValueForm::Kind::number);
  form.minimum = 0;
  form.exclusive_minimum = true;
  form.maximum = static_cast<double>(std::numeric_limits<float>::max());
  form.note = "a float";
  return member_field(key, member, read_positive_float, form, doc);
}

template <class T>
Field<T> boolean(std::string_view key, bool T::*member, std::string_view doc) {
  return member_field(key, member, read_bool, plain_form(ValueForm::Kind::boolean), doc);
}

template <class T>
Field<T> text(std::string_view key, std::string T::*member, std::string_view doc) {
  return member_field(key, member, read_string, plain_form(ValueForm::Kind::string), doc);
}

template <class T, class E, std::size_t N>
Field<T> choice(std::string_view key, E T::*member, const std::array<EnumName<E>, N>& names,
                std::string_view doc) {
  const auto read = [&names](const Json& v, const std::string& p) {
    return read_enum(v, p, names);
  };
  Field<T> f = member_field(key, member, read, choice_form(enum_names(names)), doc);
  f.value_of = [member, &names](const T& t) { return Json(name_in(names, t.*member)); };
  return f;
}

// A choice whose enum has renamed spellings (`old_names`): a file's old spelling is replaced by
// today's before the reader sees it (old_spellings.h), so the reader takes today's only.
template <class T, class E, std::size_t N, std::size_t M>
Field<T> choice(std::string_view key, E T::*member, const std::array<EnumName<E>, N>& names,
                const std::array<OldName<E>, M>& old_names, std::string_view doc) {
  Field<T> f = choice(key, member, names, doc);
  for (const auto& o : old_names)
    f.renamed.push_back({std::string(o.old_name), std::string(name_in(names, o.value))});
  return f;
}

// A [min, max] pair, or one integer n meaning [n, n]; both ends within [lo, hi].
template <class T>
Field<T> range(std::string_view key, Range T::*member, int32_t lo, int32_t hi,
               std::string_view doc) {
  ValueForm form = integer_form(lo, hi);
  form.kind = ValueForm::Kind::range;
  return {.key = key,
          .read = [=](const Json& v, const std::string& p, T& out) {
            if (!v.is_array() && !v.is_number())
              fail(p, fmt::format("got {}, expected {} or a [min, max] pair of them", describe(v),
                                  integer_range_text(lo, hi)));
            if (v.is_number()) {
              const int32_t n = read_int(v, p, lo, hi);
              out.*member = Range{n, n};
              return;
            }
            if (v.size() != 2)
              fail(p, fmt::format("got {}, expected a [min, max] pair of two integers",
                                  describe(v)));
            const Range r{read_int(v[0], child_pointer(p, 0), lo, hi),
                          read_int(v[1], child_pointer(p, 1), lo, hi)};
            if (r.max < r.min)
              fail(p, fmt::format("got [{}, {}], but max {} is below min {}", r.min, r.max, r.max,
                                  r.min));
            out.*member = r;
          },
          .value_of = [=](const T& t) { return Json::array({(t.*member).min, (t.*member).max}); },
          .forms = {form},
          .doc = doc};
}

template <class T, class S>
Field<T> object(std::string_view key, S T::*member, const Fields<S>& (*fields)(),
                std::string_view doc) {
  return {.key = key,
          .read = [=](const Json& v, const std::string& p, T& out) {
            read_object(fields(), v, p, out.*member);
          },
          .forms = {plain_form(ValueForm::Kind::object)},
          .doc = doc,
          .add_children = [=](const std::string& p, const Getter<T>& get,
                              std::vector<FieldInfo>& out) {
            const Getter<S> get_member = [get, member](const Scenario& s) -> const S& {
              return get(s).*member;
            };
            add_fields(fields(), p, get_member, out);
          }};
}

}  // namespace kv::field_table
