// One encode/decode check against the host in every launch mode: a stream, the default
// stream, and CUDA graph capture with an unaligned payload and workspace.
#pragma once

#include "../common/backend_checks.hpp"
#include "gpu_backend.hpp"

namespace testg {

inline void check_matches_host_every_mode(const pipecodec::spec& s, pipecodec::dtype in_t, pipecodec::shape shp,
                                          uint64_t seed, std::initializer_list<pipecodec::dtype> out_types) {
  for (launch_mode mode : {launch_mode::stream, launch_mode::default_stream, launch_mode::graph}) {
    gpu_backend b;
    b.mode = mode;
    b.payload_offset = mode == launch_mode::graph ? 3 : 0;
    b.workspace_offset = mode == launch_mode::graph ? 1 : 0;
    CAPTURE(int(mode));
    testb::check_matches_host(b, s, in_t, shp, seed, out_types);
  }
}

}  // namespace testg
