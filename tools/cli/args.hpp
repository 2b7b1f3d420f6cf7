// Command-line parsing for the pipecodec CLI: `--key value` or `--key=value` options (each
// command lists the keys it accepts) and positional arguments. Errors are cli::error,
// which main() prints as the single stderr line.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace cli {

struct error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A payload declaring an output above the --max-elements cap: its own exit status (3), so a
// script can tell "too large for this limit" from "malformed".
struct limit_error : error {
  using error::error;
};

struct args {
  std::map<std::string, std::string> options;  // key without the leading "--"
  std::vector<std::string> positional;

  bool has(const std::string& key) const { return options.count(key) != 0; }
  const std::string& get(const std::string& key) const { return options.at(key); }
  std::string get_or(const std::string& key, const std::string& fallback) const {
    return has(key) ? get(key) : fallback;
  }
};

// Parses argv[first..argc) accepting only the option keys in `known`; each takes one value.
inline args parse_args(int argc, char** argv, int first, const std::vector<std::string>& known) {
  args a;
  for (int i = first; i < argc; ++i) {
    const std::string t = argv[i];
    if (t.size() < 3 || t.compare(0, 2, "--") != 0) {
      if (t.size() > 1 && t[0] == '-') throw error("unknown option '" + t + "'");
      a.positional.push_back(t);
      continue;
    }
    const size_t eq = t.find('=');
    const std::string key = t.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    bool accepted = false;
    for (const auto& k : known) accepted = accepted || k == key;
    if (!accepted) throw error("unknown option '--" + key + "'");
    if (a.has(key)) throw error("option '--" + key + "' given twice");
    if (eq != std::string::npos) {
      a.options[key] = t.substr(eq + 1);
    } else {
      if (i + 1 >= argc) throw error("option '--" + key + "' needs a value");
      a.options[key] = argv[++i];
    }
  }
  return a;
}

// Checks the number of positional arguments, naming them in the message.
inline void expect_positional(const args& a, size_t count, const char* what) {
  if (a.positional.size() != count)
    throw error(std::string("expected ") + what + ", got " + std::to_string(a.positional.size()) +
                " argument(s)");
}

inline uint64_t parse_uint(const std::string& key, const std::string& v) {
  if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos)
    throw error("option '--" + key + "': expected a non-negative integer, got '" + v + "'");
  return std::stoull(v);
}

}  // namespace cli
