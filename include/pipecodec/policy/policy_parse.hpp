// The text form of a policy, for command lines and config files.
//
//   policy := clause { ";" clause }           (blanks around clauses are ignored)
//   clause := [ "b" N "." ] key "=" value      bN. applies the clause to boundary N only
//   fwd | bwd = spec [ "+" state ]            spec as in spec_string.hpp
//   state  := none | ef [ "(" efopt { "," efopt } ")" ] | ef21 | aqsgd [ "(" opt { "," opt } ")" ]
//   efopt  := scope=batch|sample  dtype=fp32|fp16|bf16  capacity=N  store=host|device
//             batch: one residual of the batch's shape (row r carries over to row r of the
//             next call); sample: one residual per training sample, keyed by sample id
//             (capacity and store only with scope=sample)
//   opt    := store=host|device  dtype=fp32|fp16|bf16  capacity=N
//   warmup = N [ step | steps | epoch | epochs ]   (steps when no unit)
//   infer  = compress | plain
//
// e.g. "fwd=topk:ratio=0.1,scope=row+aqsgd(store=host,dtype=fp16); bwd=quant:bits=8;
//       warmup=1epoch; infer=compress; b2.bwd=quant:bits=4"
// Clauses without a prefix set every boundary; prefixed ones override that boundary, whatever
// their order (the override starts as a copy of the unprefixed settings). Errors name the bad
// token. to_string() writes the canonical form, and parse_policy(to_string(p)) == p.
#pragma once

#include "policy.hpp"

namespace pipecodec {

namespace detail {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// One "k=v" option of ef(...) or aqsgd(...); false when the value is bad. An unknown key
// sets `known` to false.
inline bool parse_state_option(state_spec& st, std::string_view k, std::string_view v, bool& known) {
  known = true;
  if (k == "dtype") return parse_dtype(v, st.scheme == state_scheme::ef ? st.ef.storage : st.aqsgd.storage);
  if (k == "capacity") return parse_u64(v, st.scheme == state_scheme::ef ? st.ef.capacity : st.aqsgd.capacity);
  if (k == "store") {
    store_location& at = st.scheme == state_scheme::ef ? st.ef.store : st.aqsgd.store;
    if (v == "host") at = store_location::host;
    else if (v == "device") at = store_location::device;
    else return false;
    return true;
  }
  if (st.scheme == state_scheme::ef && k == "scope") {
    if (v == "batch") st.ef.scope = ef_scope::batch;
    else if (v == "sample") st.ef.scope = ef_scope::sample;
    else return false;
    return true;
  }
  known = false;
  return true;
}

inline status parse_state(std::string_view text, state_spec& out, std::string* error) {
  state_spec st;
  const size_t paren = text.find('(');
  const std::string_view name = text.substr(0, paren);
  if (name == "none") st.scheme = state_scheme::none;
  else if (name == "ef") st.scheme = state_scheme::ef;
  else if (name == "ef21") st.scheme = state_scheme::ef21;
  else if (name == "aqsgd") st.scheme = state_scheme::aqsgd;
  else return spec_error(error, "unknown state scheme '" + std::string(name) + "'");
  if (paren != std::string_view::npos) {
    if (st.scheme != state_scheme::aqsgd && st.scheme != state_scheme::ef)
      return spec_error(error, "state scheme '" + std::string(name) + "' takes no options");
    if (text.back() != ')') return spec_error(error, "missing ')' in '" + std::string(text) + "'");
    std::string_view rest = text.substr(paren + 1, text.size() - paren - 2);
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      const size_t eq = item.find('=');
      const std::string_view k = item.substr(0, eq);
      const std::string_view v = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
      bool known = true;
      const bool good = eq != std::string_view::npos && parse_state_option(st, k, v, known);
      if (!known) return spec_error(error, "unknown " + std::string(name) + " option '" + std::string(k) + "'");
      if (!good) return spec_error(error, "bad " + std::string(name) + " option '" + std::string(item) + "'");
    }
    if (st.scheme == state_scheme::ef && st.ef.scope == ef_scope::batch &&
        (st.ef.capacity != 0 || st.ef.store != store_location::host))
      return spec_error(error, "ef options 'capacity' and 'store' need scope=sample in '" + std::string(text) + "'");
  }
  out = st;
  return status::success;
}

inline status parse_direction(std::string_view text, direction_policy& out, std::string* error) {
  direction_policy d;
  const size_t plus = text.find('+');
  status st = parse_spec(text.substr(0, plus), d.codec, error);
  if (!ok(st)) return st;
  if (plus != std::string_view::npos) {
    st = parse_state(text.substr(plus + 1), d.state, error);
    if (!ok(st)) return st;
  }
  out = d;
  return status::success;
}

inline status parse_warmup(std::string_view v, schedule& s, std::string* error) {
  size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
  const std::string_view unit = v.substr(digits);
  uint64_t n = 0;
  if (!parse_u64(v.substr(0, digits), n))
    return spec_error(error, "bad warmup '" + std::string(v) + "' (expected N, Nsteps or Nepochs)");
  if (unit.empty() || unit == "step" || unit == "steps") s.unit = warmup_unit::steps;
  else if (unit == "epoch" || unit == "epochs") s.unit = warmup_unit::epochs;
  else return spec_error(error, "bad warmup unit '" + std::string(unit) + "'");
  s.warmup = n;
  return status::success;
}

// Applies one "key=value" clause (prefix already removed) to a boundary policy.
inline status apply_clause(std::string_view k, std::string_view v, boundary_policy& b, std::string* error) {
  if (k == "fwd") return parse_direction(v, b.fwd, error);
  if (k == "bwd") return parse_direction(v, b.bwd, error);
  if (k == "warmup") return parse_warmup(v, b.sched, error);
  if (k == "infer") {
    if (v == "compress") b.sched.infer = inference_mode::compress;
    else if (v == "plain") b.sched.infer = inference_mode::plain;
    else return spec_error(error, "bad infer '" + std::string(v) + "' (expected compress or plain)");
    return status::success;
  }
  return spec_error(error, "unknown policy key '" + std::string(k) + "'");
}

struct clause {
  bool has_boundary = false;
  uint32_t boundary = 0;
  std::string_view key, value;
};

inline status split_clause(std::string_view text, clause& c, std::string* error) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos)
    return spec_error(error, "expected key=value, got '" + std::string(text) + "'");
  std::string_view k = trim(text.substr(0, eq));
  c.value = trim(text.substr(eq + 1));
  const size_t dot = k.find('.');
  if (dot != std::string_view::npos) {
    uint64_t n = 0;
    if (k[0] != 'b' || !parse_u64(k.substr(1, dot - 1), n) || n > 0xFFFFFFFFu)
      return spec_error(error, "bad boundary prefix '" + std::string(k.substr(0, dot + 1)) + "' (expected bN.)");
    c.has_boundary = true;
    c.boundary = uint32_t(n);
    k = k.substr(dot + 1);
  }
  c.key = k;
  return status::success;
}

// The options of a per-sample store (AQ-SGD, EF scope=sample) in canonical order.
inline std::string store_options(store_location at, dtype storage, uint64_t capacity) {
  return std::string("store=") + (at == store_location::host ? "host" : "device") + ",dtype=" + to_string(storage) +
         ",capacity=" + std::to_string(capacity);
}

inline std::string state_string(const state_spec& s) {
  switch (s.scheme) {
    case state_scheme::none: return "none";
    case state_scheme::ef:
      if (s.ef == ef_options{}) return "ef";
      if (s.ef.scope == ef_scope::batch) return std::string("ef(scope=batch,dtype=") + to_string(s.ef.storage) + ")";
      return "ef(scope=sample," + store_options(s.ef.store, s.ef.storage, s.ef.capacity) + ")";
    case state_scheme::ef21: return "ef21";
    case state_scheme::aqsgd:
      return "aqsgd(" + store_options(s.aqsgd.store, s.aqsgd.storage, s.aqsgd.capacity) + ")";
  }
  return "unknown";
}

}  // namespace detail

inline std::string to_string(const direction_policy& d) {
  std::string r = to_string(d.codec);
  if (d.state.scheme != state_scheme::none) r += "+" + detail::state_string(d.state);
  return r;
}

namespace detail {

inline std::string boundary_string(const boundary_policy& b, const std::string& prefix) {
  std::string r;
  for (direction d : {direction::fwd, direction::bwd}) {
    r += prefix + (d == direction::fwd ? "fwd=" : "bwd=") + to_string(b[d]) + "; ";
  }
  r += prefix + "warmup=" + std::to_string(b.sched.warmup) +
       (b.sched.unit == warmup_unit::epochs ? "epochs" : "steps") + "; ";
  r += prefix + "infer=" + (b.sched.infer == inference_mode::compress ? "compress" : "plain");
  return r;
}

}  // namespace detail

// Parses the text form into `out` (left untouched on error; `error` then names the token).
inline status parse_policy(std::string_view text, policy& out, std::string* error = nullptr) {
  std::vector<detail::clause> clauses;
  while (!text.empty()) {
    const size_t semi = text.find(';');
    const std::string_view item = detail::trim(text.substr(0, semi));
    text = semi == std::string_view::npos ? std::string_view{} : text.substr(semi + 1);
    if (item.empty()) continue;
    detail::clause c;
    const status st = detail::split_clause(item, c, error);
    if (!ok(st)) return st;
    clauses.push_back(c);
  }
  policy p;
  for (int pass = 0; pass < 2; ++pass) {  // unprefixed clauses first, so overrides copy them
    for (const detail::clause& c : clauses) {
      if (c.has_boundary != (pass == 1)) continue;
      boundary_policy& b = c.has_boundary ? p.override_at(c.boundary) : p.all;
      const status st = detail::apply_clause(c.key, c.value, b, error);
      if (!ok(st)) return st;
    }
  }
  out = std::move(p);
  return status::success;
}

inline std::string to_string(const policy& p) {
  std::string r = detail::boundary_string(p.all, "");
  for (const auto& o : p.overrides) r += "; " + detail::boundary_string(o.second, "b" + std::to_string(o.first) + ".");
  return r;
}

}  // namespace pipecodec
