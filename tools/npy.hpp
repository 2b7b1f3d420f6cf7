// Minimal .npy reader/writer for the tools: little-endian float32 ('<f4') and float16
// ('<f2'), 1-D or 2-D, C order; int64 ('<i8') read only (sample ids). Anything else is
// rejected with a message saying why.
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "pipecodec/core/format.hpp"

namespace npy {

struct error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A parsed .npy file: element type, shape and where the C-order data starts.
struct array_info {
  pipecodec::dtype type = pipecodec::dtype::f32;
  pipecodec::shape shp{};
  size_t data_offset = 0;
};

namespace detail {

constexpr char magic[] = "\x93NUMPY";
constexpr size_t magic_len = 6;

// Value text of `'key': value` in the header dict, up to the next ',' or '}' outside ().
inline std::string dict_value(const std::string& h, const std::string& key) {
  const size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) throw error("npy: header has no '" + key + "' entry");
  size_t p = h.find(':', k);
  if (p == std::string::npos) throw error("npy: header: no ':' after '" + key + "'");
  ++p;
  while (p < h.size() && h[p] == ' ') ++p;
  size_t e = p;
  int depth = 0;
  for (; e < h.size(); ++e) {
    if (h[e] == '(') ++depth;
    if (h[e] == ')') --depth;
    if (depth == 0 && (h[e] == ',' || h[e] == '}')) break;
    if (depth < 0) throw error("npy: header: unbalanced ')'");
  }
  if (e == h.size()) throw error("npy: header: unterminated '" + key + "' entry");
  std::string v = h.substr(p, e - p);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

inline uint64_t parse_dim(const std::string& t) {
  if (t.empty() || t.size() > 18 || t.find_first_not_of("0123456789") != std::string::npos)
    throw error("npy: header: bad dimension '" + t + "'");
  return std::stoull(t);
}

// "(n,)", "(r, c)"; anything else (0-D, 3-D, non-numbers) is rejected.
inline pipecodec::shape parse_shape(const std::string& v) {
  if (v.size() < 2 || v.front() != '(' || v.back() != ')') throw error("npy: header: bad shape " + v);
  std::vector<uint64_t> dims;
  std::string cur;
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    const char c = v[i];
    if (c == ' ') continue;
    if (c == ',') {
      dims.push_back(parse_dim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) dims.push_back(parse_dim(cur));
  if (dims.size() == 1) return pipecodec::shape(dims[0]);
  if (dims.size() == 2) return pipecodec::shape(dims[0], dims[1]);
  throw error("npy: only 1-D and 2-D arrays are supported, got shape " + v);
}

}  // namespace detail

inline bool has_magic(const std::vector<uint8_t>& file) {
  return file.size() >= detail::magic_len && std::memcmp(file.data(), detail::magic, detail::magic_len) == 0;
}

// The dtype-independent part of a header: descr text (quoted, as written), shape and
// where the C-order data starts.
struct header_info {
  std::string descr;
  pipecodec::shape shp{};
  size_t data_offset = 0;
};

namespace detail {

// Checks that the data after the header is exactly shape x element size.
inline void check_data_size(const std::vector<uint8_t>& file, const header_info& h, uint64_t elem_bytes) {
  uint64_t n = 0;
  if (!h.shp.count(n) || n > pipecodec::max_elements) throw error("npy: shape too large");
  const uint64_t want = n * elem_bytes;
  const uint64_t have = file.size() - h.data_offset;
  if (have != want)
    throw error("npy: data is " + std::to_string(have) + " bytes, shape needs " + std::to_string(want));
}

}  // namespace detail

// Parses the header of a .npy file held in memory: version, dict, C order, 1-D/2-D shape.
inline header_info parse_header(const std::vector<uint8_t>& file) {
  using namespace detail;
  if (!has_magic(file)) throw error("npy: bad magic");
  if (file.size() < magic_len + 4) throw error("npy: truncated header");
  const uint8_t major = file[6];
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = size_t(file[8]) | size_t(file[9]) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (file.size() < 12) throw error("npy: truncated header");
    header_len = size_t(file[8]) | size_t(file[9]) << 8 | size_t(file[10]) << 16 | size_t(file[11]) << 24;
    header_start = 12;
  } else {
    throw error("npy: unsupported format version " + std::to_string(major));
  }
  if (file.size() - header_start < header_len) throw error("npy: truncated header");
  const std::string h(reinterpret_cast<const char*>(file.data() + header_start), header_len);
  if (h.empty() || h[0] != '{' || h.find('}') == std::string::npos) throw error("npy: header is not a dict");

  header_info info;
  info.descr = dict_value(h, "descr");
  const std::string order = dict_value(h, "fortran_order");
  if (order == "True") throw error("npy: fortran_order arrays are not supported (save in C order)");
  if (order != "False") throw error("npy: bad fortran_order value " + order);
  info.shp = parse_shape(dict_value(h, "shape"));
  info.data_offset = header_start + header_len;
  return info;
}

// A float .npy file ('<f4' or '<f2'): header checked, data size checked.
inline array_info parse(const std::vector<uint8_t>& file) {
  const header_info h = parse_header(file);
  array_info info;
  if (h.descr == "'<f4'") info.type = pipecodec::dtype::f32;
  else if (h.descr == "'<f2'") info.type = pipecodec::dtype::f16;
  else throw error("npy: unsupported dtype " + h.descr + " (need '<f4' or '<f2')");
  detail::check_data_size(file, h, pipecodec::dtype_bytes(info.type));
  info.shp = h.shp;
  info.data_offset = h.data_offset;
  return info;
}

// An int64 .npy file ('<i8' only: no other integer width or byte order is converted).
inline header_info parse_i8(const std::vector<uint8_t>& file) {
  const header_info h = parse_header(file);
  if (h.descr != "'<i8'") throw error("npy: unsupported dtype " + h.descr + " (need '<i8', little-endian int64)");
  detail::check_data_size(file, h, 8);
  return h;
}

// The bytes of a version 1.0 .npy file holding `data` (C order), header padded to 64.
inline std::vector<uint8_t> serialize(pipecodec::dtype type, pipecodec::shape shp, const void* data,
                                      size_t bytes) {
  if (type == pipecodec::dtype::bf16) throw error("npy has no bfloat16 dtype (write raw bytes instead)");
  std::string dims = shp.ndim == 1 ? std::to_string(shp.cols) + ","
                                   : std::to_string(shp.rows) + ", " + std::to_string(shp.cols);
  std::string h = std::string("{'descr': '") + (type == pipecodec::dtype::f32 ? "<f4" : "<f2") +
                  "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t unpadded = detail::magic_len + 4 + h.size() + 1;
  h.append((64 - unpadded % 64) % 64, ' ');
  h += '\n';
  std::vector<uint8_t> out(detail::magic_len + 4 + h.size() + bytes);
  std::memcpy(out.data(), detail::magic, detail::magic_len);
  out[6] = 1;
  out[7] = 0;
  out[8] = uint8_t(h.size());
  out[9] = uint8_t(h.size() >> 8);
  std::memcpy(out.data() + 10, h.data(), h.size());
  if (bytes) std::memcpy(out.data() + 10 + h.size(), data, bytes);
  return out;
}

}  // namespace npy
