// Which random words an encode draws, and from what: a run of elements draws consecutive
// words of one stream, keyed by the call's seed and counted by flat position, or (rng=sample)
// keyed by the row's sample id and counted by column. Both backends use these.
#pragma once

#include "buffers.hpp"
#include "philox.hpp"
#include "shape.hpp"
#include "spec.hpp"

namespace pipecodec::detail {

// The Philox key of sample `id` under a call's seed: SplitMix64's finalizer spreads the id, so
// consecutive ids give unrelated keys.
PIPECODEC_HD uint64_t sample_key(uint64_t seed, uint64_t id) {
  uint64_t z = id + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return seed ^ (z ^ (z >> 31));
}

// The random words of a run of elements: element i of the run takes word first + i of
// `stream` under `key` (word w is word w & 3 of block w >> 2).
struct draw {
  uint64_t key;
  uint32_t stream;
  uint64_t first;
};

PIPECODEC_HD uint32_t draw_word(const draw& d, uint64_t i) {
  const uint64_t w = d.first + i;
  return random_block(d.key, d.stream, w >> 2).v[w & 3u];
}

// The rounding draws of a run starting at flat element `begin` inside one row of `cols`.
// rng=sample reads the row's id from `r.sample_ids` (checked by check_sample_keyed first).
PIPECODEC_HD draw rounding_draw(const randomness& r, rng_key k, uint64_t cols, uint64_t begin) {
  if (k == rng_key::position) return draw{r.seed, stream_rounding, begin};
  const uint64_t row = begin / cols;
  return draw{sample_key(r.seed, r.sample_ids[row]), stream_rounding_sample, begin - row * cols};
}

// The `rows` sample ids an encode reads: present (invalid_argument) and 8-aligned (misaligned).
PIPECODEC_HD status check_sample_ids(const uint64_t* ids, uint64_t rows) {
  if (rows == 0) return status::success;
  if (ids == nullptr) return status::invalid_argument;
  return ids_aligned(ids) ? status::success : status::misaligned;
}

// An rng=sample encode needs one id per row and groups that never straddle two rows (each
// row's bits then depend on that row alone): invalid_argument without ids, invalid_shape
// for groups that straddle. `group_len`: elements per group of the flat tensor.
PIPECODEC_HD status check_sample_keyed(rng_key k, const randomness& r, const shape& s, uint64_t group_len) {
  if (k == rng_key::position) return status::success;
  uint64_t n = 0;
  if (!s.count(n) || n == 0) return status::success;
  if (const status st = check_sample_ids(r.sample_ids, s.rows); !ok(st)) return st;
  return s.rows <= 1 || s.cols % group_len == 0 ? status::success : status::invalid_shape;
}

}  // namespace pipecodec::detail
