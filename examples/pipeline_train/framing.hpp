// What travels between two stages besides the pipecodec payload: a message is the payload,
// then (forward messages only) the micro-batch's sample ids, then a 16-byte frame naming the
// step, micro-batch and row count. The payload comes first so that it starts at the
// buffer's start, aligned for the decoder. Only stage 0 reads the data order: the other
// stages learn each micro-batch's samples from the ids that travel with it (AQ-SGD and
// per-sample EF key their state by them; the last stage looks up the labels).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace train {

struct frame {
  uint64_t step;   // training step, or ~0 - k for the k-th inference batch
  uint32_t micro;  // micro-batch index in the step
  uint32_t rows;   // rows of the micro-batch
};
static_assert(sizeof(frame) == 16, "frame is 16 bytes on the wire");

// Bytes a message adds to its payload: the frame, and the sample ids when they travel.
inline size_t framing_bytes(uint32_t rows, bool with_ids) { return sizeof(frame) + (with_ids ? 8 * size_t(rows) : 0); }

// Appends the ids (when not null) and the frame after the payload of `len` bytes at msg;
// returns the message size. msg holds len + framing_bytes() bytes.
inline size_t seal(uint8_t* msg, size_t len, const frame& f, const uint64_t* ids) {
  if (ids) {
    std::memcpy(msg + len, ids, 8 * size_t(f.rows));
    len += 8 * size_t(f.rows);
  }
  std::memcpy(msg + len, &f, sizeof f);
  return len + sizeof f;
}

// Checks the frame of a message of n bytes against what the receiver expects, copies the
// ids out (when `ids` is not null) and returns the payload's length. A mismatch is a bug in
// the schedule or the transport, not hostile input: it stops the program.
inline size_t unseal(const uint8_t* msg, size_t n, const frame& expect, uint64_t* ids) {
  const size_t extra = framing_bytes(expect.rows, ids != nullptr);
  frame f{};
  if (n >= extra) std::memcpy(&f, msg + n - sizeof f, sizeof f);
  if (n < extra || f.step != expect.step || f.micro != expect.micro || f.rows != expect.rows) {
    std::fprintf(stderr,
                 "pipeline_train: message of %zu bytes is step %llu micro-batch %u (%u rows), expected step %llu "
                 "micro-batch %u (%u rows)\n",
                 n, (unsigned long long)f.step, f.micro, f.rows, (unsigned long long)expect.step, expect.micro,
                 expect.rows);
    std::exit(3);
  }
  if (ids) std::memcpy(ids, msg + n - extra, 8 * size_t(f.rows));
  return n - extra;
}

}  // namespace train
