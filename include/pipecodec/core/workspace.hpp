// Workspace layout: one figure serves both backends (the host backend uses none of it).
// The CUDA backend aligns the caller's pointer up to 16 bytes, then uses
//   [status area: device-side status word, codec, parsed header]
//   [quantization, large groups or outliers: partial statistics per tile | parameters per group]
//   [quantization with rotation: the rotated tensor in fp32 (the host backend uses this too)]
//   lowrank: [status area | Q0 | M Q0] (both backends)
// Groups of more than quant_resident_chunks chunks are encoded in three passes: statistics
// of tiles of quant_tile_chunks chunks, one reduction per group, then quantization.
#pragma once

#include "float_format.hpp"
#include "lowrank_format.hpp"
#include "quant_layout.hpp"
#include "quant_math.hpp"

namespace pipecodec::detail {

constexpr uint64_t workspace_align = 16;
constexpr uint64_t workspace_status_bytes = 256;  // status word, codec, parsed payload header
constexpr uint64_t quant_resident_chunks = 8;    // one warp holds a whole group in registers
constexpr uint64_t quant_tile_chunks = 64;       // chunks per warp tile of a large group

struct quant_workspace {
  bool tiled = false;             // the three-pass path for large groups
  uint64_t tiles_per_group = 0;
  uint64_t tiles = 0;
  uint64_t partials_offset = 0;   // group_stats per tile
  uint64_t params_offset = 0;     // group_params per group
  uint64_t rotated_offset = 0;    // rotation: n fp32 values
  uint64_t used = 0;              // bytes used after the pointer is aligned
};

PIPECODEC_HD quant_workspace make_quant_workspace(const quant_layout& L) {
  quant_workspace w;
  // Outlier keeping computes each group's parameters in a kernel of its own, then
  // quantizes as the tiled path does.
  w.tiled = L.chunks_per_group > quant_resident_chunks || L.outliers != 0;
  if (w.tiled) {
    w.tiles_per_group = ceil_div(L.chunks_per_group, quant_tile_chunks);
    w.tiles = L.groups * w.tiles_per_group;
  }
  w.partials_offset = workspace_status_bytes;
  w.params_offset = w.partials_offset + align16(w.tiles * sizeof(group_stats));
  const uint64_t params_end = w.params_offset + (w.tiled ? L.groups * sizeof(group_params) : 0);
  w.rotated_offset = align16(params_end);
  w.used = L.rotate_log2 != 0 ? w.rotated_offset + L.n * 4 : params_end;
  return w;
}

// fp8 / mx encoding on the device: the amax word of every group (reduced with atomicMax),
// then its scale.
struct float_workspace {
  uint64_t amax_offset = 0;   // uint32_t per group
  uint64_t scales_offset = 0; // float_scale per group
  uint64_t used = 0;
};

PIPECODEC_HD float_workspace make_float_workspace(uint64_t groups) {
  float_workspace w;
  w.amax_offset = workspace_status_bytes;
  w.scales_offset = w.amax_offset + align16(groups * 4);
  w.used = w.scales_offset + groups * sizeof(float_scale);
  return w;
}

// lowrank encoding (both backends): Q0 in f32, then M Q0 in double.
struct lowrank_workspace {
  uint64_t q0_offset = 0;  // cols x rank f32
  uint64_t pd_offset = 0;  // rows x rank f64
  uint64_t used = 0;
};

PIPECODEC_HD lowrank_workspace make_lowrank_workspace(const lowrank_layout& L) {
  lowrank_workspace w;
  w.q0_offset = workspace_status_bytes;
  w.pd_offset = w.q0_offset + align16(L.cols * L.rank * 4);
  w.used = w.pd_offset + L.rows * L.rank * 8;
  return w;
}

// Bytes a caller provides for `used` bytes: room to align any pointer up to 16.
PIPECODEC_HD uint64_t workspace_request(uint64_t used) { return used + workspace_align - 1; }

}  // namespace pipecodec::detail
