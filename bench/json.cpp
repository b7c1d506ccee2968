#include "json.hpp"

#include <cstdlib>

namespace cairn::bench {

namespace {

class parser {
 public:
  explicit parser(std::string_view text) : s_(text) {}

  std::optional<json_value> document() {
    json_value v;
    if (!value(v, 0)) return std::nullopt;
    skip_space();
    if (i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  static constexpr int max_depth = 64;

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }

  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  bool value(json_value& v, int depth) {
    if (depth > max_depth) return false;
    skip_space();
    if (i_ >= s_.size()) return false;
    switch (s_[i_]) {
      case '{': return object(v, depth);
      case '[': return array(v, depth);
      case '"': v.type = json_value::kind::string; return string(v.string);
      case 't':
        v.type = json_value::kind::boolean;
        v.boolean = true;
        return literal("true");
      case 'f':
        v.type = json_value::kind::boolean;
        v.boolean = false;
        return literal("false");
      case 'n': v.type = json_value::kind::null; return literal("null");
      default: v.type = json_value::kind::number; return number(v.number);
    }
  }

  bool object(json_value& v, int depth) {
    v.type = json_value::kind::object;
    ++i_;  // '{'
    skip_space();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return true;
    }
    while (true) {
      skip_space();
      std::string key;
      if (i_ >= s_.size() || s_[i_] != '"' || !string(key)) return false;
      skip_space();
      if (i_ >= s_.size() || s_[i_] != ':') return false;
      ++i_;
      json_value member;
      if (!value(member, depth + 1)) return false;
      v.members.emplace_back(std::move(key), std::move(member));
      skip_space();
      if (i_ >= s_.size()) return false;
      if (s_[i_] == '}') {
        ++i_;
        return true;
      }
      if (s_[i_] != ',') return false;
      ++i_;
    }
  }

  bool array(json_value& v, int depth) {
    v.type = json_value::kind::array;
    ++i_;  // '['
    skip_space();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return true;
    }
    while (true) {
      json_value element;
      if (!value(element, depth + 1)) return false;
      v.array.push_back(std::move(element));
      skip_space();
      if (i_ >= s_.size()) return false;
      if (s_[i_] == ']') {
        ++i_;
        return true;
      }
      if (s_[i_] != ',') return false;
      ++i_;
    }
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool hex4(unsigned& cp) {
    if (i_ + 4 > s_.size()) return false;
    cp = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      cp <<= 4;
      if (c >= '0' && c <= '9')
        cp |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        cp |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        cp |= static_cast<unsigned>(c - 'A' + 10);
      else
        return false;
    }
    return true;
  }

  bool string(std::string& out) {
    ++i_;  // '"'
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) return false;
      switch (s_[i_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
            unsigned low = 0;
            if (!literal("\\u") || !hex4(low) || low < 0xDC00 || low >= 0xE000) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            return false;
          }
          append_utf8(out, cp);
          break;
        }
        default: return false;
      }
    }
    return false;
  }

  bool digits() {
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > start;
  }

  bool number(double& out) {
    const std::size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0')
      ++i_;
    else if (!digits())
      return false;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return false;
    }
    const std::string text(s_.substr(start, i_ - start));
    out = std::strtod(text.c_str(), nullptr);
    return true;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

const json_value* json_value::get(std::string_view key) const {
  if (type != kind::object) return nullptr;
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

std::optional<std::string> json_value::string_at(std::string_view key) const {
  const json_value* v = get(key);
  if (!v || v->type != kind::string) return std::nullopt;
  return v->string;
}

std::optional<double> json_value::number_at(std::string_view key) const {
  const json_value* v = get(key);
  if (!v || v->type != kind::number) return std::nullopt;
  return v->number;
}

std::optional<json_value> parse_json(std::string_view text) { return parser(text).document(); }

}  // namespace cairn::bench
