// Every operation reports a status; nothing in the core throws.
#pragma once

#include "config.hpp"

namespace pipecodec {

enum class status : int {
  success = 0,
  invalid_argument,     // null pointer with a non-zero size, unknown enum value
  invalid_spec,         // a spec field out of range (bits, group, k, ...)
  invalid_shape,        // shape does not fit the spec (e.g. u16 indices with cols > 65536)
  not_supported,        // a combination this build does not provide
  buffer_too_small,     // payload capacity below encoded_bytes()
  workspace_too_small,  // workspace below workspace_bytes()
  misaligned,           // a pointer that must be aligned is not
  aliasing,             // input and output buffers overlap
  size_overflow,        // a size does not fit in 64 bits
  truncated,            // payload shorter than its header or than its declared size
  bad_magic,            // not a pipecodec payload
  unsupported_version,  // a payload of a format version this build cannot read
  unknown_codec,        // codec id not known to this build
  invalid_header,       // a header field out of range or a reserved field not zero
  size_mismatch,        // declared size disagrees with the size the header implies
  shape_mismatch,       // payload shape or dtype differs from the output view
  corrupt_payload,      // section contents invalid (non-finite scale, bad index, ...)
  state_mismatch,       // stateful codec: state shape/dtype differs from the payload
  id_mismatch,          // stateful codec: sample ids differ from those expected
  capacity_exceeded,    // a store has no room for another sample
  cuda_error,           // a CUDA runtime call failed
  out_of_memory,        // an allocator (RAII owners only) returned no memory
  io_error,             // a file could not be opened, read or written (host helpers only)
  device_math_mismatch, // the device's float arithmetic differs from the host's (fast-math or FTZ build)
};

PIPECODEC_HD constexpr bool ok(status s) { return s == status::success; }

inline const char* to_string(status s) {
  switch (s) {
    case status::success: return "success";
    case status::invalid_argument: return "invalid argument";
    case status::invalid_spec: return "invalid spec";
    case status::invalid_shape: return "invalid shape";
    case status::not_supported: return "not supported";
    case status::buffer_too_small: return "payload buffer too small";
    case status::workspace_too_small: return "workspace too small";
    case status::misaligned: return "misaligned pointer";
    case status::aliasing: return "input and output overlap";
    case status::size_overflow: return "size overflows 64 bits";
    case status::truncated: return "payload truncated";
    case status::bad_magic: return "bad magic (not a pipecodec payload)";
    case status::unsupported_version: return "unsupported format version";
    case status::unknown_codec: return "unknown codec";
    case status::invalid_header: return "invalid header field";
    case status::size_mismatch: return "declared size does not match header";
    case status::shape_mismatch: return "payload shape or dtype does not match output";
    case status::corrupt_payload: return "corrupt payload contents";
    case status::state_mismatch: return "state does not match payload";
    case status::id_mismatch: return "sample ids do not match";
    case status::capacity_exceeded: return "store capacity exceeded";
    case status::cuda_error: return "CUDA runtime error";
    case status::out_of_memory: return "out of memory";
    case status::io_error: return "file I/O error";
    case status::device_math_mismatch:
      return "device float arithmetic differs from the host's (--use_fast_math or -ftz=true?)";
  }
  return "unknown status";
}

// The enumerator's own name ("corrupt_payload"), for logs and bindings that key on it.
inline const char* status_name(status s) {
  switch (s) {
    case status::success: return "success";
    case status::invalid_argument: return "invalid_argument";
    case status::invalid_spec: return "invalid_spec";
    case status::invalid_shape: return "invalid_shape";
    case status::not_supported: return "not_supported";
    case status::buffer_too_small: return "buffer_too_small";
    case status::workspace_too_small: return "workspace_too_small";
    case status::misaligned: return "misaligned";
    case status::aliasing: return "aliasing";
    case status::size_overflow: return "size_overflow";
    case status::truncated: return "truncated";
    case status::bad_magic: return "bad_magic";
    case status::unsupported_version: return "unsupported_version";
    case status::unknown_codec: return "unknown_codec";
    case status::invalid_header: return "invalid_header";
    case status::size_mismatch: return "size_mismatch";
    case status::shape_mismatch: return "shape_mismatch";
    case status::corrupt_payload: return "corrupt_payload";
    case status::state_mismatch: return "state_mismatch";
    case status::id_mismatch: return "id_mismatch";
    case status::capacity_exceeded: return "capacity_exceeded";
    case status::cuda_error: return "cuda_error";
    case status::out_of_memory: return "out_of_memory";
    case status::io_error: return "io_error";
    case status::device_math_mismatch: return "device_math_mismatch";
  }
  return "unknown";
}

}  // namespace pipecodec
