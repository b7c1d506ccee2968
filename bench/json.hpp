#pragma once
/// \file
/// A small JSON reader for the rows cairn-bench reads back (a spawned child's output): the whole
/// grammar of RFC 8259 (objects, arrays, strings with escapes, numbers, true/false/null), no
/// extensions. Rows are short; values are copied into a plain tree.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cairn::bench {

/// One parsed JSON value.
struct json_value {
  /// What the value is.
  enum class kind { null, boolean, number, string, array, object };
  kind type = kind::null;                                   ///< which of the members holds it
  bool boolean = false;                                     ///< for kind::boolean
  double number = 0;                                        ///< for kind::number
  std::string string;                                       ///< for kind::string
  std::vector<json_value> array;                            ///< for kind::array
  std::vector<std::pair<std::string, json_value>> members;  ///< for kind::object, in order

  /// The member called `key` of an object, or nullptr (also for a non-object).
  [[nodiscard]] const json_value* get(std::string_view key) const;
  /// The member's string, if it is one.
  [[nodiscard]] std::optional<std::string> string_at(std::string_view key) const;
  /// The member's number, if it is one.
  [[nodiscard]] std::optional<double> number_at(std::string_view key) const;
};

/// Parses one JSON text (surrounding white space allowed); nullopt when it is not valid JSON.
std::optional<json_value> parse_json(std::string_view text);

}  // namespace cairn::bench
