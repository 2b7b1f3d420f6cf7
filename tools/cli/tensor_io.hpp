// Files in and out of the CLI: whole-file reads and writes, and tensors as .npy (fp32,
// fp16) or raw little-endian bytes (any dtype, bf16 always, since .npy has no bf16).
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../npy.hpp"
#include "args.hpp"
#include "pipecodec/policy/spec_string.hpp"

namespace cli {

// An owned tensor; std::vector's storage is aligned for float.
struct tensor {
  pipecodec::dtype type = pipecodec::dtype::f32;
  pipecodec::shape shp{};
  std::vector<uint8_t> bytes;

  pipecodec::const_tensor_view view() const { return {bytes.data(), type, shp}; }
  pipecodec::tensor_view mutable_view() { return {bytes.data(), type, shp}; }
  uint64_t size() const { return shp.size(); }
  float at(uint64_t i) const {
    switch (type) {
      case pipecodec::dtype::f32: return pipecodec::detail::load<pipecodec::dtype::f32>(bytes.data(), i);
      case pipecodec::dtype::f16: return pipecodec::detail::load<pipecodec::dtype::f16>(bytes.data(), i);
      case pipecodec::dtype::bf16: return pipecodec::detail::load<pipecodec::dtype::bf16>(bytes.data(), i);
    }
    return 0;
  }
};

inline std::vector<uint8_t> read_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw error("cannot open '" + path + "': " + std::strerror(errno));
  std::vector<uint8_t> data;
  uint8_t buf[1 << 16];
  size_t got = 0;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + got);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw error("cannot read '" + path + "'");
  return data;
}

inline void write_file(const std::string& path, const void* data, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw error("cannot create '" + path + "': " + std::strerror(errno));
  const bool ok = (n == 0 || std::fwrite(data, 1, n, f) == n);
  if (std::fclose(f) != 0 || !ok) throw error("cannot write '" + path + "'");
}

inline pipecodec::dtype parse_dtype_option(const std::string& v) {
  pipecodec::dtype t;
  if (!pipecodec::detail::parse_dtype(v, t)) throw error("option '--dtype': expected f32, f16 or bf16, got '" + v + "'");
  return t;
}

// "N" (1-D) or "RxC" (2-D).
inline pipecodec::shape parse_shape_option(const std::string& v) {
  const size_t x = v.find('x');
  if (v.find_first_not_of("0123456789x") != std::string::npos || v.find('x', x + 1) != std::string::npos ||
      x == 0 || x + 1 == v.size())
    throw error("option '--shape': expected N or RxC, got '" + v + "'");
  if (x == std::string::npos) return pipecodec::shape(parse_uint("shape", v));
  return pipecodec::shape(parse_uint("shape", v.substr(0, x)), parse_uint("shape", v.substr(x + 1)));
}

// Reads IN as raw bytes when --dtype and --shape are given, as .npy otherwise.
inline tensor load_tensor(const std::string& path, const args& a) {
  std::vector<uint8_t> file = read_file(path);
  tensor t;
  if (a.has("dtype") || a.has("shape")) {
    if (!a.has("dtype") || !a.has("shape")) throw error("raw input needs both --dtype and --shape");
    t.type = parse_dtype_option(a.get("dtype"));
    t.shp = parse_shape_option(a.get("shape"));
    uint64_t n = 0;
    if (!t.shp.count(n) || n > pipecodec::max_elements) throw error("--shape " + a.get("shape") + " is too large");
    if (file.size() != n * pipecodec::dtype_bytes(t.type))
      throw error("'" + path + "' has " + std::to_string(file.size()) + " bytes, --dtype/--shape need " +
                  std::to_string(n * pipecodec::dtype_bytes(t.type)));
    t.bytes = std::move(file);
    return t;
  }
  if (!npy::has_magic(file)) throw error("'" + path + "' is not a .npy file (raw input needs --dtype and --shape)");
  try {
    const npy::array_info info = npy::parse(file);
    t.type = info.type;
    t.shp = info.shp;
    t.bytes.assign(file.begin() + long(info.data_offset), file.end());
  } catch (const npy::error& e) {
    throw error("'" + path + "': " + e.what());
  }
  return t;
}

// Writes .npy for fp32/fp16 and raw little-endian bytes for bf16.
inline void save_tensor(const std::string& path, const tensor& t) {
  if (t.type == pipecodec::dtype::bf16) {
    if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0)
      throw error("bf16 output is raw bytes (.npy has no bf16 dtype): name it e.g. '" +
                  path.substr(0, path.size() - 4) + ".bf16'");
    write_file(path, t.bytes.data(), t.bytes.size());
    return;
  }
  const std::vector<uint8_t> file = npy::serialize(t.type, t.shp, t.bytes.data(), t.bytes.size());
  write_file(path, file.data(), file.size());
}

}  // namespace cli
