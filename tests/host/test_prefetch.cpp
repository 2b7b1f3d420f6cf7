// The tiled senders' prefetch of the next tile (host/prefetch.hpp): which lines it counts for
// the ranges it is given, its caps, and how step() spreads them. Prefetches are hints, so
// only this bookkeeping can be wrong in a way a test sees; the payloads and states of the
// tiled steps are checked in test_state_tiled.cpp.
#include <doctest/doctest.h>

#include "pipecodec/host/prefetch.hpp"

using pipecodec::host::detail::line_prefetcher;

namespace {

alignas(64) char buf[1 << 17];

// Steps until nothing is pending (at most `limit` steps); returns the number of steps.
int steps_to_finish(line_prefetcher& pf, int limit = 1 << 12) {
  int n = 0;
  while (pf.pending() > 0 && n < limit) {
    pf.step();
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("line_prefetcher: every line a range touches, once, spread over the steps asked for") {
  line_prefetcher one;
  one.add(buf + 10, 100);  // bytes 10 .. 109: lines 0 and 1
  one.pace(1);
  CHECK(one.pending() == 2);
  CHECK(steps_to_finish(one) == 1);

  line_prefetcher edge;
  edge.add(buf + 64, 64);  // exactly line 1
  edge.pace(1);
  CHECK(edge.pending() == 1);

  line_prefetcher spread;
  spread.add(buf, 640);       // 10 lines
  spread.add(buf + 4096, 1);  // one more in another range
  spread.pace(4);             // 3 a step
  CHECK(spread.pending() == 11);
  spread.step();
  CHECK(spread.pending() == 8);
  CHECK(steps_to_finish(spread) == 3);

  line_prefetcher no_steps;  // a tile of no groups still requests its lines in one step
  no_steps.add(buf, 256);
  no_steps.pace(0);
  CHECK(steps_to_finish(no_steps) == 1);
}

TEST_CASE("line_prefetcher: empty ranges, and more ranges or lines than it takes") {
  line_prefetcher empty;
  empty.add(buf, 0);
  empty.pace(8);
  CHECK(empty.pending() == 0);
  empty.step();  // nothing to do, and no range to walk off
  CHECK(empty.pending() == 0);

  line_prefetcher many;
  for (uint32_t r = 0; r < line_prefetcher::max_ranges + 4; ++r) many.add(buf + 256 * r, 64);
  many.pace(1);
  CHECK(many.pending() == line_prefetcher::max_ranges);
  CHECK(steps_to_finish(many) == 1);

  line_prefetcher big;
  big.add(buf, sizeof(buf));  // 2048 lines, capped
  big.add(buf, 64);           // past the cap: not taken
  big.pace(32);
  CHECK(big.pending() == line_prefetcher::max_lines);
  CHECK(steps_to_finish(big) == 32);
}
