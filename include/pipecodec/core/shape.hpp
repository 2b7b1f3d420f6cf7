// Shapes and non-owning views of caller memory.
#pragma once

#include "dtype.hpp"

namespace pipecodec {

// A 1-D tensor of n elements (ndim 1, rows 1) or a rows x cols matrix (ndim 2), row-major.
struct shape {
  uint64_t rows = 1;
  uint64_t cols = 0;
  uint8_t ndim = 1;

  constexpr shape() = default;
  constexpr explicit shape(uint64_t n) : rows(1), cols(n), ndim(1) {}
  constexpr shape(uint64_t r, uint64_t c) : rows(r), cols(c), ndim(2) {}

  // Element count; false when rows * cols overflows 64 bits.
  PIPECODEC_HD bool count(uint64_t& n) const {
    if (cols != 0 && rows > ~uint64_t(0) / cols) return false;
    n = rows * cols;
    return true;
  }
  PIPECODEC_HD uint64_t size() const { return rows * cols; }
  PIPECODEC_HD bool operator==(const shape& o) const {
    return rows == o.rows && cols == o.cols && ndim == o.ndim;
  }
  PIPECODEC_HD bool operator!=(const shape& o) const { return !(*this == o); }
};

struct tensor_view {
  void* data = nullptr;
  dtype type = dtype::f32;
  shape shp{};
};

struct const_tensor_view {
  const void* data = nullptr;
  dtype type = dtype::f32;
  shape shp{};

  constexpr const_tensor_view() = default;
  constexpr const_tensor_view(const void* d, dtype t, shape s) : data(d), type(t), shp(s) {}
  constexpr const_tensor_view(const tensor_view& v) : data(v.data), type(v.type), shp(v.shp) {}
};

}  // namespace pipecodec
