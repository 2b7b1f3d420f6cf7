// Device harness (c): the receive steps of the stateful schemes, host against CUDA on the
// emulated GPU, with fuzzer bytes as the payload or message. First byte, bit 0: the scheme.
//
// EF21 (0): ef21_decode(expected codec, payload, g, out) on both. Same status; on success the
// same g and out bytes (g += decoded, out = g in fp32); on rejection g and out untouched.
// Input: scheme | codec byte (the receiver's configured codec, 1..7) | g dtype byte | shape
// (rows u8: 0 for 1-D; cols u16 % 1200) | payload.
//
// AQ-SGD (1): both receivers hold the same store (samples 1, 2, 3 from a genuine first
// message), then decode the fuzzer's message for a batch of distinct expected ids (from 1..6,
// within the capacity of 6) and a warm-up flag, as a caller must pass them. The CUDA receiver
// predicts the row kinds from the flag and its table (warm for unseen samples or a warm-up
// step), the host reads them from the message: where they agree, same status and, on success,
// the same table, rows and output; where they differ, the device must reject (the host may
// accept) and leave its store untouched.
// Input: scheme | config (codec, warm-up codec, cols, state dtype) | batch (rows, warm-up
// flag, ids) | message.
#pragma once

#include "aqsgd_start.hpp"
#include "device_decode.hpp"

namespace pcfuzz {

inline int device_ef21(reader& r) {
  using namespace pipecodec;
  const codec_id expected = codec_id(1 + r.u8() % 7);
  const dtype gt = dtype_from(r.u8());
  const uint8_t rows = r.u8() % 5;
  const uint64_t cols = r.u16() % 1200;
  const shape shp = rows == 0 ? shape(cols) : shape(rows, cols);
  const std::vector<uint8_t> payload(r.rest(), r.rest() + r.remaining());
  const uint64_t n = shp.size();
  const std::vector<uint8_t> g = ramp_bytes(gt, n, 19, 0.25F), out(n * 4, 0x5A);

  std::vector<uint8_t> hg = g, hout = out;
  const status hs = host::ef21_decode(expected, bytes_of(payload), payload.size(), tensor_view{hg.data(), gt, shp},
                                      tensor_view{hout.data(), dtype::f32, shp});

  device_context& ctx = device_context::get();
  const size_t ws_size = size_t(detail::workspace_request(
      std::max(detail::topk_decode_workspace(n, false), uint64_t(detail::workspace_status_bytes))));
  device_bytes dp(payload.size(), &payload), dg(g.size(), &g), dout(out.size(), &out), ws(ws_size);
  status ds = cuda::ef21_decode(expected, dp.get(), payload.size(), tensor_view{n ? dg.get() : nullptr, gt, shp},
                                tensor_view{n ? dout.get() : nullptr, dtype::f32, shp}, ws.get(), ws_size, ctx.stream);
  ds = ctx.finish(ds, ws.get());
  const std::vector<uint8_t> dgv = dg.read(g.size()), doutv = dout.read(out.size());

  PCFUZZ_CHECK(hs == ds, "ef21_decode (expecting %s): host %s, device %s", to_string(expected), to_string(hs),
               to_string(ds));
  if (!ok(hs)) {
    PCFUZZ_CHECK(hg == g && hout == out, "the host changed g or out on %s", to_string(hs));
    PCFUZZ_CHECK(dgv == g && doutv == out, "the device changed g or out on %s", to_string(ds));
    return 0;
  }
  PCFUZZ_CHECK(first_difference(hg, dgv) < 0, "g differs at byte %ld", first_difference(hg, dgv));
  PCFUZZ_CHECK(first_difference(hout, doutv) < 0, "out differs at byte %ld", first_difference(hout, doutv));
  return 0;
}

// The table and rows of a host store, byte for byte.
inline std::vector<uint8_t> store_bytes(const pipecodec::host::aqsgd_config& c, const pipecodec::host::aqsgd_store& s) {
  const auto* t = reinterpret_cast<const uint8_t*>(s.table.words);
  std::vector<uint8_t> out(t, t + pipecodec::aqsgd_table_bytes(c.capacity));
  const auto* rows = static_cast<const uint8_t*>(s.rows.data);
  out.insert(out.end(), rows, rows + pipecodec::host::aqsgd_rows_bytes(c));
  return out;
}

inline int device_aqsgd(reader& r) {
  using namespace pipecodec;
  const uint8_t codec = r.u8(), cols = r.u8(), type = r.u8();
  aqsgd_receivers h(aqsgd_receivers::config(codec, cols, type));
  const host::aqsgd_config& c = h.c;
  const uint8_t batch = r.u8();
  const uint64_t rows = (batch & 7) % 6;
  const bool warmup = (batch & 8) != 0;
  std::vector<uint64_t> ids;  // distinct, in the fuzzer's order
  for (uint64_t i = 0; i < rows; ++i) {
    const uint64_t id = 1 + r.u8() % 6;
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  const uint64_t n = ids.size();
  const std::vector<uint8_t> msg(r.rest(), r.rest() + r.remaining());

  // The device store: the host receiver's table (host memory) and rows (device memory).
  const std::vector<uint8_t> before = store_bytes(c, h.receiver.store());
  const uint64_t table_bytes = aqsgd_table_bytes(c.capacity);
  std::vector<uint64_t> table(table_bytes / 8);
  cuda::aqsgd_device_store ds;
  PCFUZZ_CHECK(ok(init_aqsgd_table(table.data(), table_bytes, c.capacity, ds.table)), "device table");
  std::memcpy(table.data(), before.data(), table_bytes);
  const std::vector<uint8_t> rows_before(before.begin() + long(table_bytes), before.end());
  device_bytes drows(rows_before.size(), &rows_before);
  ds.rows = tensor_view{drows.get(), c.state_type, shape(c.capacity, c.cols)};

  // The kinds the CUDA receiver expects: warm for a warm-up step or an unseen sample. A message
  // that is no frame at all must get the host's status.
  std::vector<uint8_t> predicted(n);
  for (uint64_t i = 0; i < n; ++i)
    predicted[i] = warmup || h.receiver.store().table.find(ids[i]) == aqsgd_table::npos ? aqsgd_row_warm
                                                                                          : aqsgd_row_delta;
  aqsgd_frame f;
  const bool framed = ok(detail::parse_aqsgd_frame(bytes_of(msg), msg.size(), f));
  const bool kinds_agree = !framed || (f.rows == n && std::equal(predicted.begin(), predicted.end(),
                                                                 msg.begin() + long(f.kinds_offset())));

  std::vector<uint8_t> hout(n * c.cols * 4, 0x5A), out_init = hout;
  const status hs = h.receiver.decode(bytes_of(msg), msg.size(), n ? ids.data() : nullptr,
                                      tensor_view{hout.data(), dtype::f32, shape(n, c.cols)});
  device_context& ctx = device_context::get();
  void* plan = nullptr;
  PCFUZZ_CUDA(cudaMallocHost(&plan, cuda::aqsgd_plan_bytes(n)));
  const size_t ws_size = cuda::aqsgd_workspace_bytes(c, n);
  device_bytes dmsg(msg.size(), &msg), dout(hout.size(), &out_init), ws(ws_size);
  status st = cuda::aqsgd_decode(c, ds, ids.data(), n, warmup, dmsg.get(), msg.size(),
                                 tensor_view{n ? dout.get() : nullptr, dtype::f32, shape(n, c.cols)}, plan,
                                 cuda::aqsgd_plan_bytes(n), ws.get(), ws_size, ctx.stream);
  st = ctx.finish(st, ws.get());
  if (ok(st)) PCFUZZ_CHECK(ok(cuda::aqsgd_commit(ds, plan)), "commit");
  (void)cudaFreeHost(plan);
  std::vector<uint8_t> drows_after = drows.read(rows_before.size());
  const std::vector<uint8_t> dout_after = dout.read(hout.size());
  const std::vector<uint8_t> after =
      store_bytes(c, host::aqsgd_store{ds.table, tensor_view{drows_after.data(), c.state_type, ds.rows.shp}});

  if (!kinds_agree) {
    PCFUZZ_CHECK(!ok(st), "the device accepted a message whose row kinds differ from its batch's (host: %s)",
                 to_string(hs));
  } else {
    PCFUZZ_CHECK(hs == st, "aqsgd_decode (%s, %llu rows, warm-up %d): host %s, device %s",
                 to_string(c.codec).c_str(), (unsigned long long)n, int(warmup), to_string(hs), to_string(st));
  }
  if (!ok(st)) {
    PCFUZZ_CHECK(after == before && dout_after == out_init, "the device changed its store or output on %s",
                 to_string(st));
    if (!ok(hs)) PCFUZZ_CHECK(store_bytes(c, h.receiver.store()) == before && hout == out_init,
                              "the host changed its store or output on %s", to_string(hs));
    return 0;
  }
  PCFUZZ_CHECK(first_difference(store_bytes(c, h.receiver.store()), after) < 0, "stores differ");
  PCFUZZ_CHECK(first_difference(hout, dout_after) < 0, "outputs differ");
  return 0;
}

int fuzz_device_state(const uint8_t* data, size_t size) {
  reader r(data, size);
  return r.u8() & 1 ? device_aqsgd(r) : device_ef21(r);
}

}  // namespace pcfuzz
