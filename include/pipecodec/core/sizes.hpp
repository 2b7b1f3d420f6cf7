// Sizes known on the host before any data is seen, so a runtime can allocate its payload
// and workspace buffers once (and capture its step in a CUDA graph).
#pragma once

#include "float_format.hpp"
#include "plain_format.hpp"
#include "quant_layout.hpp"
#include "topk_format.hpp"
#include "workspace.hpp"

namespace pipecodec {

// Exact payload size for fixed-size codecs, an upper bound otherwise; 0 when the spec is
// invalid for the shape (0 is never a valid size: the header alone takes 64 bytes).
inline size_t encoded_bytes(const spec& s, const shape& shp) {
  switch (s.codec) {
    case codec_id::quant: {
      detail::quant_layout L;
      return detail::make_quant_layout(s.quant, shp, L) ? size_t(L.total) : 0;
    }
    case codec_id::plain: {
      detail::plain_layout L;
      return detail::make_plain_layout(s.plain, shp, L) ? size_t(L.total) : 0;
    }
    case codec_id::topk:
    case codec_id::randk: {
      detail::topk_desc d;
      detail::topk_layout L;
      if (!ok(detail::resolve_topk(s, shp, 0, d)) || !detail::make_topk_layout(d, shp, L)) return 0;
      return size_t(detail::topk_payload_bytes(d, L, shp.rows));
    }
    case codec_id::fp8:
    case codec_id::mx: {
      detail::float_layout L;
      return detail::make_float_layout(s.codec, s.flt, shp, L) ? size_t(L.total) : 0;
    }
    case codec_id::lowrank: {
      detail::lowrank_layout L;
      return detail::make_lowrank_layout(s.lowrank, shp, L) ? size_t(L.total) : 0;
    }
  }
  return 0;
}

// Scratch memory an encode or decode needs, the same figure for both backends so one
// allocation serves either (any alignment: backends align it up to 16; core/workspace.hpp
// has the layout). The host backend needs it only for TopK/RandK selection, rotation and lowrank. 0 when the spec
// is invalid for the shape.
inline size_t workspace_bytes(const spec& s, const shape& shp) {
  switch (s.codec) {
    case codec_id::quant: {
      detail::quant_layout L;
      if (!detail::make_quant_layout(s.quant, shp, L)) return 0;
      return size_t(detail::workspace_request(detail::make_quant_workspace(L).used));
    }
    case codec_id::plain: {
      detail::plain_layout L;
      if (!detail::make_plain_layout(s.plain, shp, L)) return 0;
      return size_t(detail::workspace_request(detail::workspace_status_bytes));
    }
    case codec_id::topk:
    case codec_id::randk: {
      detail::topk_desc d;
      detail::topk_layout L;
      if (!ok(detail::resolve_topk(s, shp, 0, d)) || !detail::make_topk_layout(d, shp, L)) return 0;
      return size_t(detail::workspace_request(detail::make_topk_workspace(d, L).total));
    }
    case codec_id::fp8:
    case codec_id::mx: {
      detail::float_layout L;
      if (!detail::make_float_layout(s.codec, s.flt, shp, L)) return 0;
      return size_t(detail::workspace_request(detail::make_float_workspace(L.groups).used));
    }
    case codec_id::lowrank: {
      detail::lowrank_layout L;
      if (!detail::make_lowrank_layout(s.lowrank, shp, L)) return 0;
      return size_t(detail::workspace_request(detail::make_lowrank_workspace(L).used));
    }
  }
  return 0;
}

// The shape of lowrank's warm-start state (Q) for tensors of `shp`: cols x rank fp32, the
// same for any number of rows; an empty shape for other codecs.
inline shape lowrank_state_shape(const spec& s, const shape& shp) {
  return s.codec == codec_id::lowrank ? shape(shp.cols, s.lowrank.rank) : shape(0, 0);
}

}  // namespace pipecodec
