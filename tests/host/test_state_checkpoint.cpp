// Save/restore of EF, EF21 and AQ-SGD state: round trips (memory and file) that keep both
// sides bit-identical, and corrupted checkpoints rejected with the target untouched.
#include <cstdio>

#include "../common/print.hpp"
#include "../common/state_check.hpp"
#include "pipecodec/host/checkpoint.hpp"

using namespace pipecodec;
using namespace tstate;

namespace {

std::vector<uint8_t> save(checkpoint_kind k, const_tensor_view v) {
  std::vector<uint8_t> buf(host::checkpoint_bytes(v));
  host::memory_sink sink{buf.data(), buf.size()};
  const status st = host::save_checkpoint(k, v, sink);
  REQUIRE_MESSAGE(ok(st), st);
  REQUIRE(sink.used == buf.size());
  return buf;
}

std::vector<uint8_t> save(const host::aqsgd_state& s) {
  std::vector<uint8_t> buf(host::checkpoint_bytes(s.config(), s.store()));
  host::memory_sink sink{buf.data(), buf.size()};
  REQUIRE(ok(host::save_checkpoint(s.config(), s.store(), sink)));
  REQUIRE(sink.used == buf.size());
  return buf;
}

// The store every checkpoint test uses: 33 features, 4-bit row quantization.
host::aqsgd_config checkpoint_config(dtype t, uint64_t capacity) {
  return store_config("quant:bits=4,group=row", 33, t, capacity);
}

// Runs `steps` batches through a sender/receiver pair (ids from a pool of 20).
void run_steps(host::aqsgd_state& tx, host::aqsgd_state& rx, int steps, uint64_t seed) {
  std::vector<uint8_t> msg(tx.message_bytes());
  const uint64_t cols = tx.config().cols;
  for (int step = 0; step < steps; ++step) {
    std::vector<uint64_t> ids;
    for (uint64_t r = 0; r < 5; ++r) ids.push_back(100 + (seed * 7 + uint64_t(step) * 5 + r * 3) % 20);
    const auto a = make_step(5 * cols, seed + step, dtype::f32);
    size_t len = 0;
    REQUIRE(ok(tx.encode(ids.data(), const_tensor_view{a.bytes.data(), dtype::f32, shape(5, cols)}, false, msg.data(),
                         msg.size(), step, &len)));
    REQUIRE(ok(rx.decode(msg.data(), len, ids.data())));
  }
}

}  // namespace

TEST_CASE("checkpoint: EF21 state round trip keeps both sides bit-identical") {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
    const shape shp(3, 70);
    const spec s = parse("quant:bits=3,group=row");
    host::ef21_state tx, rx, rx2;
    REQUIRE(ok(tx.init(s, shp, t)));
    REQUIRE(ok(rx.init(s, shp, t)));
    REQUIRE(ok(rx2.init(s, shp, t)));
    std::vector<uint8_t> payload(tx.payload_bytes());
    for (int step = 0; step < 5; ++step) {
      const auto x = make_step(shp.size(), step, dtype::f32);
      size_t len = 0;
      REQUIRE(ok(tx.encode(const_tensor_view{x.bytes.data(), dtype::f32, shp}, payload.data(), payload.size(), 0, &len)));
      REQUIRE(ok(rx.decode(payload.data(), len)));
    }
    const auto ck = save(checkpoint_kind::ef21_state, rx.state());
    REQUIRE(ok(host::restore_checkpoint(ck.data(), ck.size(), checkpoint_kind::ef21_state, rx2.state())));
    CHECK(snapshot(rx2.state()) == snapshot(tx.state()));
    // Resumed receiver keeps tracking the sender.
    const auto x = make_step(shp.size(), 99, dtype::f32);
    size_t len = 0;
    REQUIRE(ok(tx.encode(const_tensor_view{x.bytes.data(), dtype::f32, shp}, payload.data(), payload.size(), 0, &len)));
    REQUIRE(ok(rx2.decode(payload.data(), len)));
    CHECK(snapshot(rx2.state()) == snapshot(tx.state()));
    // Kind, dtype and shape must match the target.
    host::ef_state ef;
    REQUIRE(ok(ef.init(s, shp, t)));
    CHECK(host::restore_checkpoint(ck.data(), ck.size(), checkpoint_kind::ef_residual, ef.residual()) ==
          status::state_mismatch);
    host::ef21_state narrow;
    REQUIRE(ok(narrow.init(s, shape(3, 69), t)));
    CHECK(host::restore_checkpoint(ck.data(), ck.size(), checkpoint_kind::ef21_state, narrow.state()) ==
          status::state_mismatch);
  }
}

TEST_CASE("checkpoint: an empty tensor with a null pointer saves and restores") {
  // memcpy must not get the null pointer even for 0 bytes (UBSan's nonnull check in the
  // sanitizer stage; the fuzzer found the restore side).
  for (checkpoint_kind k : {checkpoint_kind::ef_residual, checkpoint_kind::ef21_state}) {
    const shape shp(0, 5);
    const auto buf = save(k, const_tensor_view{nullptr, dtype::f32, shp});
    CHECK(ok(host::restore_checkpoint(buf.data(), buf.size(), k, tensor_view{nullptr, dtype::f32, shp})));
    CHECK(host::restore_checkpoint(buf.data(), buf.size(), k, tensor_view{nullptr, dtype::f32, shape(1, 5)}) ==
          status::state_mismatch);
  }
}

TEST_CASE("checkpoint: AQ-SGD store round trip (ids, table, rows), through a file too") {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
    CAPTURE_TEXT(storage_name(t));
    const auto c = checkpoint_config(t, 32);
    host::aqsgd_state tx, rx, restored, bigger;
    REQUIRE(ok(tx.init(c, 5)));
    REQUIRE(ok(rx.init(c, 5)));
    REQUIRE(ok(restored.init(c, 5)));
    run_steps(tx, rx, 12, 1);
    REQUIRE(tx.count() == 20);
    const auto ck = save(rx);
    // Restore over a store that already holds other samples: it is replaced entirely.
    host::aqsgd_state junk;
    REQUIRE(ok(junk.init(c, 5)));
    run_steps(restored, junk, 3, 5);
    REQUIRE(ok(host::restore_checkpoint(ck.data(), ck.size(), c, restored.store())));
    CHECK(snapshot(restored) == snapshot(tx));
    // Through a file, into a store with a larger capacity.
    const std::string path = "state_ck_test_" + std::string(storage_name(t)) + ".bin";
    REQUIRE(ok(host::save_checkpoint_file(path.c_str(), rx.config(), rx.store())));
    auto c2 = c;
    c2.capacity = 50;
    REQUIRE(ok(bigger.init(c2, 5)));
    REQUIRE(ok(host::restore_checkpoint_file(path.c_str(), c2, bigger.store())));
    std::remove(path.c_str());
    CHECK(bigger.count() == tx.count());
    CHECK(snapshot(bigger.store().rows).size() > snapshot(tx.store().rows).size());
    // Training resumes: the restored receivers follow the sender bit for bit.
    host::aqsgd_state tx_copy;
    REQUIRE(ok(tx_copy.init(c, 5)));
    const auto ck_tx = save(tx);
    REQUIRE(ok(host::restore_checkpoint(ck_tx.data(), ck_tx.size(), c, tx_copy.store())));
    run_steps(tx, restored, 6, 2);
    run_steps(tx_copy, bigger, 6, 2);
    CHECK(snapshot(restored) == snapshot(tx));
    CHECK(snapshot(tx_copy) == snapshot(tx));
    for (uint64_t slot = 0; slot < tx.count(); ++slot)
      CHECK(bigger.store().table.ids_by_slot()[slot] == tx.store().table.ids_by_slot()[slot]);
    // Too many samples for the target, or other cols/dtype.
    host::aqsgd_state tiny;
    auto c3 = c;
    c3.capacity = 8;
    REQUIRE(ok(tiny.init(c3, 5)));
    const auto tiny0 = snapshot(tiny);
    CHECK(host::restore_checkpoint(ck.data(), ck.size(), c3, tiny.store()) == status::capacity_exceeded);
    CHECK(snapshot(tiny) == tiny0);
  }
}

TEST_CASE("checkpoint: corrupted checkpoints are rejected and leave the target untouched") {
  const auto c = checkpoint_config(dtype::f16, 32);
  host::aqsgd_state tx, rx, target, junk;
  REQUIRE(ok(tx.init(c, 5)));
  REQUIRE(ok(rx.init(c, 5)));
  REQUIRE(ok(target.init(c, 5)));
  REQUIRE(ok(junk.init(c, 5)));
  run_steps(tx, rx, 8, 3);
  run_steps(target, junk, 4, 4);
  const auto ck = save(tx);
  const auto target0 = snapshot(target);
  const auto check_rejected = [&](const std::vector<uint8_t>& bad, size_t len) {
    const status st = host::restore_checkpoint(bad.data(), len, c, target.store());
    REQUIRE(!ok(st));
    REQUIRE(snapshot(target) == target0);
    return st;
  };
  for (size_t cut = 0; cut < ck.size(); cut += 7) check_rejected(ck, cut);
  CHECK(check_rejected(ck, ck.size() - 1) == status::truncated);
  // Every single-bit flip is caught (by a field check or by the checksum).
  for (size_t i = 0; i < ck.size(); ++i) {
    auto bad = ck;
    bad[i] ^= uint8_t(1u << (i % 8));
    check_rejected(bad, bad.size());
  }
  // A well-formed checkpoint (valid checksum) with a duplicated id.
  auto dup = ck;
  std::memcpy(dup.data() + checkpoint_header_bytes + 8, dup.data() + checkpoint_header_bytes, 8);
  const uint64_t body = dup.size() - checkpoint_trailer_bytes;
  detail::fnv1a64 sum;
  sum.update(dup.data(), body);
  detail::put_u64(dup.data() + body, sum.h);
  CHECK(check_rejected(dup, dup.size()) == status::corrupt_payload);
  // Bad fields are refused by their own checks, before the checksum is even computed.
  auto bad_count = ck;
  detail::put_u64(bad_count.data() + 40, 33);  // count above capacity
  CHECK(check_rejected(bad_count, bad_count.size()) == status::invalid_header);
  auto ver = ck;
  ver[4] = 2;
  CHECK(check_rejected(ver, ver.size()) == status::unsupported_version);
  auto magic = ck;
  magic[0] = 'X';
  CHECK(check_rejected(magic, magic.size()) == status::bad_magic);
  // The genuine checkpoint restores.
  REQUIRE(ok(host::restore_checkpoint(ck.data(), ck.size(), c, target.store())));
  CHECK(snapshot(target) == snapshot(tx));
  CHECK(host::restore_checkpoint_file("/nonexistent/dir/ck.bin", c, target.store()) == status::io_error);
}
