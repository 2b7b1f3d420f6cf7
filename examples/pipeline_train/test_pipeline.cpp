// Unit tests of the training example's pipeline pieces: the schedules (every micro-batch
// once each way, in an order the stages can run together), the message framing, and the
// per-slot state of EF21 and per-row EF (a micro-batch's rows keep the state the same rows
// of an unpipelined batch would keep).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <pipecodec/policy/endpoint.hpp>
#include <pipecodec/policy/policy_parse.hpp>

#include <cmath>
#include <vector>

#include "framing.hpp"
#include "schedule.hpp"
#include "stage_endpoints.hpp"

using namespace train;

namespace {

// Runs every stage's action list with the data dependencies of a pipeline (F(s, m) after
// F(s-1, m); B(s, m) after F(s, m) and B(s+1, m)), each stage in its own order; returns
// false on a deadlock.
bool runs_together(schedule_kind k, int stages, int m) {
  std::vector<std::vector<action>> todo;
  for (int s = 0; s < stages; ++s) todo.push_back(training_actions(k, s, stages, m));
  std::vector<std::vector<int>> fwd(size_t(stages), std::vector<int>(size_t(m), 0)), bwd = fwd;
  std::vector<size_t> next(size_t(stages), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < stages; ++s) {
      while (next[size_t(s)] < todo[size_t(s)].size()) {
        const action a = todo[size_t(s)][next[size_t(s)]];
        const size_t i = size_t(a.micro);
        const bool ready = a.forward ? (s == 0 || fwd[size_t(s - 1)][i])
                                     : (fwd[size_t(s)][i] && (s == stages - 1 || bwd[size_t(s + 1)][i]));
        if (!ready) break;
        (a.forward ? fwd : bwd)[size_t(s)][i] = 1;
        ++next[size_t(s)];
        moved = true;
      }
    }
  }
  for (int s = 0; s < stages; ++s)
    if (next[size_t(s)] != todo[size_t(s)].size()) return false;
  return true;
}

}  // namespace

TEST_CASE("schedules: each micro-batch once each way, ascending, runnable together") {
  for (schedule_kind k : {schedule_kind::gpipe, schedule_kind::one_f_one_b})
    for (int stages = 2; stages <= 6; ++stages)
      for (int m = 1; m <= 9; ++m) {
        CAPTURE(to_string(k));
        CAPTURE(stages);
        CAPTURE(m);
        for (int s = 0; s < stages; ++s) {
          const std::vector<action> a = training_actions(k, s, stages, m);
          REQUIRE(a.size() == size_t(2 * m));
          int f = 0, b = 0, live = 0, most = 0;
          for (const action& x : a) {
            if (x.forward) CHECK(x.micro == f++);  // ascending, each once
            else CHECK(x.micro == b++);
            CHECK(b <= f);  // a backward after its forward
            live = f - b;
            most = std::max(most, live);
          }
          CHECK(f == m);
          CHECK(b == m);
          // Activations kept alive: all M under GPipe, at most S - s under 1F1B.
          CHECK(most == (k == schedule_kind::gpipe ? m : std::min(stages - s, m)));
        }
        CHECK(runs_together(k, stages, m));
      }
  CHECK(inference_actions(3).size() == 3);
  schedule_kind k{};
  CHECK(parse_schedule("1f1b", k));
  CHECK(k == schedule_kind::one_f_one_b);
  CHECK_FALSE(parse_schedule("interleaved", k));
}

TEST_CASE("framing: payload first, ids and frame after it") {
  std::vector<uint8_t> msg(100 + framing_bytes(3, true));
  for (size_t i = 0; i < 100; ++i) msg[i] = uint8_t(i);
  const uint64_t ids[3] = {7, 70000000000ull, 3};
  const frame f{42, 1, 3};
  const size_t n = seal(msg.data(), 100, f, ids);
  CHECK(n == 100 + 16 + 24);
  uint64_t back[3] = {};
  CHECK(unseal(msg.data(), n, f, back) == 100);
  CHECK(back[2] == 3);
  CHECK(back[1] == 70000000000ull);
  CHECK(msg[99] == 99);
  // Without ids (backward messages).
  CHECK(seal(msg.data(), 10, f, nullptr) == 26);
  CHECK(unseal(msg.data(), 26, f, nullptr) == 10);
}

// Two micro-batch slots of r rows against one unpipelined endpoint of 2r rows: with groups
// inside a row, the decoded rows of slot m equal rows m*r .. m*r + r-1 of the unpipelined
// batch, step after step, because each slot keeps its own state.
TEST_CASE("per-slot state: EF21 and per-row EF follow the unpipelined batch's rows") {
  namespace pc = pipecodec;
  for (const char* text : {"fwd=quant:bits=2,group=row+ef21; warmup=1step", "fwd=quant:bits=3,group=row+ef"}) {
    CAPTURE(text);
    pc::policy pol;
    REQUIRE(pc::ok(pc::parse_policy(text, pol)));
    const int r = 4, cols = 64, slots = 2;
    auto options = [&](int rows) {
      return [=](int c) {
        pc::host::endpoint_options o;
        o.max_shape = pc::shape(uint64_t(rows), uint64_t(c));
        return o;
      };
    };
    // Stage 0 of 2: it sends boundary 0's activations; stage 1 receives them.
    using eps = stage_endpoints<pc::host::sender_endpoint, pc::host::receiver_endpoint>;
    eps tx(pol, 0, 2, 8, cols, slots, options(r)), rx(pol, 1, 2, cols, 10, slots, options(r));
    eps whole_tx(pol, 0, 2, 8, cols, 1, options(slots * r)), whole_rx(pol, 1, 2, cols, 10, 1, options(slots * r));
    std::vector<float> x(size_t(slots * r * cols)), piped(x.size()), whole(x.size());
    std::vector<uint8_t> buf(whole_tx.fwd_out_bytes());
    for (uint64_t step = 0; step < 4; ++step) {
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i) + float(step));
      pc::step_info at;
      at.step = step;
      size_t len = 0;
      for (int m = 0; m < slots; ++m) {
        const pc::shape shp{uint64_t(r), uint64_t(cols)};
        const size_t off = size_t(m * r * cols);
        REQUIRE(pc::ok(tx.fwd_out(m).encode({x.data() + off, pc::dtype::f32, shp}, at, buf.data(), buf.size(), &len)));
        REQUIRE(pc::ok(rx.fwd_in(m).decode(buf.data(), len, {piped.data() + off, pc::dtype::f32, shp}, at)));
      }
      const pc::shape all{uint64_t(slots * r), uint64_t(cols)};
      REQUIRE(pc::ok(whole_tx.fwd_out(0).encode({x.data(), pc::dtype::f32, all}, at, buf.data(), buf.size(), &len)));
      REQUIRE(pc::ok(whole_rx.fwd_in(0).decode(buf.data(), len, {whole.data(), pc::dtype::f32, all}, at)));
      CAPTURE(step);
      CHECK(piped == whole);
    }
  }
  // Per-sample state and stateless directions share one endpoint across slots.
  pc::policy pol;
  REQUIRE(pc::ok(pc::parse_policy("fwd=quant:bits=4+aqsgd; bwd=quant:bits=4+ef(scope=sample)", pol)));
  CHECK_FALSE(per_slot_state(pol.at(0).fwd));
  CHECK_FALSE(per_slot_state(pol.at(0).bwd));
  REQUIRE(pc::ok(pc::parse_policy("fwd=quant:bits=4+ef21; bwd=quant:bits=4+ef", pol)));
  CHECK(per_slot_state(pol.at(0).fwd));
  CHECK(per_slot_state(pol.at(0).bwd));
}
