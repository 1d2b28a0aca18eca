#pragma once
// Small text helpers shared by every folder (they depend on analysis/), and the one set of number
// formatters every output uses (text.cpp).
#include <cstddef>
#include <cstdio>
#include <string>

namespace pipebench {

// `x` with `digits` significant digits, as printf's %g (and an ostream's default format) writes it:
// "1", "0.25", "1e+06". Messages, formulas and configuration records use it.
std::string num(double x, int digits = 6);
// printf-style formatting of one number: fmt("%.3f", x), fmt("%+.2f", x).
std::string fmt(const char* format, double x);
// `decimals` digits after the point, with a sign before positive values when `signed_`: table cells.
std::string fixed(double value, int decimals, bool signed_ = false);

// `s` without leading and trailing blanks (spaces, tabs, carriage returns).
inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// Length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 where the bytes there are not one.
std::size_t utf8_length(const std::string& s, std::size_t i);

// `s` safe to print as (part of) one line on a terminal: control bytes and DEL escaped (\n, \r, \t,
// \xHH, so no ESC sequence or line break reaches it), bytes that are not UTF-8 as \xHH, valid UTF-8
// kept. What every message of pipebench passes through before it is printed (bench/main.cpp,
// bench/run/job.cpp), so user text inside a message cannot rewrite the terminal.
std::string one_line(const std::string& s);

// `s` in single quotes, safe to print on one line of a message: control bytes, DEL, quotes and
// backslashes are escaped (\n, \t, \xHH), and anything past `max_len` bytes becomes "...".
// Bytes >= 0x80 (UTF-8 or not) are escaped too, so the result is plain ASCII.
inline std::string quoted(const std::string& s, std::size_t max_len = 80) {
  std::string out = "'";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i == max_len) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\'' || c == '\\') (out += '\\') += static_cast<char>(c);
    else if (c < 0x20 || c >= 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out + "'";
}

// Text inside SVG or HTML, element content or a double-quoted attribute: & < > " escaped.
inline std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

}  // namespace pipebench
