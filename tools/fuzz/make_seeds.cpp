// Writes the committed seed corpora of the state_seq, policy_parse, checkpoint_restore,
// device_decode, device_encode and device_state harnesses, deterministically (rerunning it
// rewrites the same files):
//   g++ -std=c++17 -Iinclude -Itools/fuzz tools/fuzz/make_seeds.cpp -o /tmp/make_seeds && /tmp/make_seeds
// run from the repository root. Seeds: state_seq byte strings (one per codec family, for EF21
// and AQ-SGD, with faults and corruptions on some steps); policy strings from docs/POLICY.md
// and tests/host/test_policy_parse.cpp; checkpoints saved from real EF, EF21 and AQ-SGD states,
// each after a selector byte (see checkpoint_restore.hpp); device_decode: host payloads of every
// codec family after a mode byte, and shared-mask pairs (see device_decode.hpp); device_encode:
// TopK and RandK specs (device_encode.hpp); device_state: EF21 payloads and AQ-SGD messages
// (device_state.hpp).
#include <fstream>
#include <string>

#include "aqsgd_start.hpp"
#include "harnesses.hpp"

using namespace pipecodec;

namespace {

void write(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  std::ofstream out("tools/fuzz/corpus/" + dir + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s/%s (run from the repository root)\n", dir.c_str(), name.c_str());
    std::exit(1);
  }
}

// A state_seq input: head bytes, then `steps` steps whose bytes are a function of the step.
std::vector<uint8_t> sequence(std::vector<uint8_t> head, int steps, int step_bytes, uint8_t salt) {
  for (int s = 0; s < steps; ++s)
    for (int b = 0; b < step_bytes; ++b) {
      // Mostly "no fault, no corruption" (small values), a fault or corruption every 3rd step.
      const uint8_t v = uint8_t(pcfuzz::mix64(uint64_t(salt) << 16 | uint64_t(s) << 8 | uint64_t(b)));
      head.push_back(s % 3 == 2 ? v : uint8_t(v & 0x3));
    }
  return head;
}

std::vector<uint8_t> save_tensor(uint8_t sel, checkpoint_kind k, const_tensor_view v) {
  auto ck = pcfuzz::save_tensor(k, v);
  ck.insert(ck.begin(), sel);
  return ck;
}

// The host payload of `x` (shape shp) under spec e; with `mask`, shared-mask values against it.
// Empty when the encode fails.
std::vector<uint8_t> host_payload(const spec& e, const std::vector<float>& x, shape shp, randomness rnd,
                                  const std::vector<uint8_t>* mask = nullptr) {
  std::vector<uint8_t> payload(encoded_bytes(e, shp)), ws(workspace_bytes(e, shp));
  const const_tensor_view v{x.data(), dtype::f32, shp};
  size_t written = 0;
  const status st = mask ? host::encode_shared(e, v, mask->data(), mask->size(), payload.data(), payload.size(),
                                               ws.data(), ws.size(), rnd.seed, &written)
                         : host::encode(e, v, payload.data(), payload.size(), ws.data(), ws.size(), rnd, &written);
  payload.resize(written);
  return ok(st) ? payload : std::vector<uint8_t>();
}

// device_decode seeds: a payload of `text` encoding a 3 x 70 tensor (a smooth ramp with two
// outliers) after each mode byte (dtype, accumulate, call), and with the TopK mask of the same
// tensor when `mask_spec` is given (shared-mask call).
bool device_decode_seeds(const std::string& name, const char* text, const char* mask_spec = nullptr) {
  spec s, ms;
  if (!ok(parse_spec(text, s)) || (mask_spec && !ok(parse_spec(mask_spec, ms)))) return false;
  const shape shp(3, 70);
  std::vector<float> x = pcfuzz::ramp(shp.size(), 53, 0.125F);
  x[17] = 40.0F;
  x[150] = -33.0F;
  const uint64_t ids[3] = {11, 7, 1u << 20};
  const randomness rnd(5, ids);
  if (mask_spec) {
    const std::vector<uint8_t> mask = host_payload(ms, x, shp, rnd),
                               values = mask.empty() ? mask : host_payload(s, x, shp, rnd, &mask);
    if (values.empty()) return false;
    for (uint8_t mode : {0x10, 0x15}) {
      std::vector<uint8_t> in{mode, uint8_t(mask.size()), uint8_t(mask.size() >> 8)};
      in.insert(in.end(), mask.begin(), mask.end());
      in.insert(in.end(), values.begin(), values.end());
      write("device_decode", name + "_" + std::to_string(mode), in);
    }
    return true;
  }
  const std::vector<uint8_t> payload = host_payload(s, x, shp, rnd);
  if (payload.empty()) return false;
  for (uint8_t mode : {0x00, 0x05, 0x0a, 0x18}) {  // fp32; fp16 accumulate; bf16 naming the codec; other rank
    std::vector<uint8_t> in{mode};
    in.insert(in.end(), payload.begin(), payload.end());
    write("device_decode", name + "_" + std::to_string(mode), in);
  }
  return true;
}

}  // namespace

int main() {
  // state_seq. EF21 head: 0, rows, cols, 2-D?, spec (2 bytes), g/x/out dtypes.
  // AQ-SGD head: 1, cols, capacity, state dtype, spec (2 bytes), warm-up spec, max rows, batch/out dtypes.
  const char* const families[] = {"quant", "plain", "topk", "randk"};
  for (uint8_t f = 0; f < 4; ++f) {
    write("state_seq", std::string("ef21_") + families[f],
          sequence({0, 2, uint8_t(20 + 13 * f), 1, uint8_t(f | 4), uint8_t(3 + 37 * f), f, uint8_t(f + 1), 2}, 6, 14, f));
    write("state_seq", std::string("aqsgd_") + families[f],
          sequence({1, uint8_t(7 + 9 * f), 5, f, uint8_t(f | 4), uint8_t(5 + 41 * f), f, 4, 0, uint8_t(f)}, 8, 24,
                   uint8_t(f + 8)));
  }
  // policy_parse
  const char* const policies[] = {
      "fwd=topk:ratio=0.1,scope=row+aqsgd(store=host,dtype=fp16); bwd=quant:bits=8; warmup=1epoch; infer=compress",
      "b2.bwd=quant:bits=4 ; fwd=quant:bits=2+ef21; bwd=quant:bits=8; b0.infer=plain",
      "fwd=quant:bits=4,group=row,round=stochastic+ef; bwd=plain:dtype=bf16; infer=plain",
      "fwd=topk:k=17,values=quant,bits=4+ef21; warmup=100; b1.fwd=plain; b3.warmup=2epochs",
      "bwd=topk:ratio=0.05,mask=shared; fwd=quant:bits=2+aqsgd(store=device,dtype=bf16,capacity=60000)",
      "fwd=randk:k=7,seed=3,unbiased=1+ef21; warmup=3steps",
      "fwd=quant+aqsgd(store=host"};
  for (size_t i = 0; i < sizeof policies / sizeof *policies; ++i)
    write("policy_parse", "doc_" + std::to_string(i), std::vector<uint8_t>(policies[i], policies[i] + strlen(policies[i])));
  // checkpoint_restore: EF residual and EF21 g of each dtype and rank, and AQ-SGD stores.
  for (uint8_t ti = 0; ti < 3; ++ti) {
    const dtype t = pcfuzz::dtype_from(ti);
    const shape shp = ti == 1 ? shape(21) : shape(3, 7);
    spec s;
    if (!ok(parse_spec("quant:bits=3,group=32", s))) return 1;
    host::ef21_state tx;
    if (!ok(tx.init(s, shp, t))) return 1;
    std::vector<uint8_t> x(size_t(shp.size() * dtype_bytes(t)), uint8_t(0x3C + ti)), payload(tx.payload_bytes());
    if (!ok(tx.encode(const_tensor_view{x.data(), t, shp}, payload.data(), payload.size()))) return 1;
    const uint8_t sel = uint8_t(ti << 4);
    write("checkpoint_restore", std::string("ef21_") + to_string(t), save_tensor(sel, checkpoint_kind::ef21_state, tx.state()));
    write("checkpoint_restore", std::string("ef_") + to_string(t) + "_fixsum",
          save_tensor(sel | 8, checkpoint_kind::ef_residual, tx.state()));

    host::aqsgd_config c;
    c.codec = s;
    c.cols = 5 + ti;
    c.state_type = t;
    c.capacity = 6;
    host::aqsgd_state a;
    if (!ok(a.init(c, 3))) return 1;
    std::vector<uint8_t> batch(size_t(3 * c.cols * dtype_bytes(t)), uint8_t(0x41 + ti)), msg(a.message_bytes());
    const uint64_t ids[3] = {uint64_t(7) << ti, 0, ~uint64_t(0)};
    if (!ok(a.encode(ids, const_tensor_view{batch.data(), t, shape(ti, c.cols)}, false, msg.data(), msg.size())))
      return 1;
    std::vector<uint8_t> ck(host::checkpoint_bytes(c, a.store()) + 1);
    host::memory_sink sink{ck.data() + 1, ck.size() - 1};
    if (!ok(host::save_checkpoint(c, a.store(), sink))) return 1;
    for (uint8_t cap_pick = 0; cap_pick < 4; ++cap_pick) {
      ck[0] = uint8_t(cap_pick << 6 | ti << 4 | (cap_pick & 1) << 3);
      write("checkpoint_restore", std::string("aqsgd_") + to_string(t) + "_cap" + std::to_string(cap_pick), ck);
    }
  }
  // device_decode: each codec family and its payload variants.
  const char* const payloads[][2] = {
      {"quant8", "quant:bits=8"},
      {"quant3_row_stoch", "quant:bits=3,group=row,round=stochastic,scale=absmax"},
      {"quant4_keyed", "quant:bits=4,group=row,round=stochastic,rng=sample"},
      {"quant2_rotated", "quant:bits=2,group=64,rotate=hadamard"},
      {"quant4_outliers", "quant:bits=4,group=32,outliers=3,scale_dtype=fp16"},
      {"plain_bf16", "plain:dtype=bf16"},
      {"fp8_e5m2", "fp8:format=e5m2,group=row"},
      {"mx_fp4", "mx:format=fp4_e2m1"},
      {"lowrank_r2", "lowrank:rank=2"},
      {"topk_tensor", "topk:ratio=0.1"},
      {"topk_row_u16_quant", "topk:k=9,scope=row,index=u16,values=quant,bits=4"},
      {"topk_bitmap_f16", "topk:ratio=0.4,index=bitmap,values=f16"},
      {"randk_unbiased", "randk:k=20,seed=3,unbiased=1"},
      {"randk_keyed", "randk:k=8,scope=row,rng=sample"}};
  for (const auto& p : payloads)
    if (!device_decode_seeds(p[0], p[1])) return std::fprintf(stderr, "cannot encode %s\n", p[1]), 1;
  if (!device_decode_seeds("shared_row", "topk:k=9,scope=row,mask=shared,values=bf16", "topk:k=9,scope=row") ||
      !device_decode_seeds("shared_tensor", "topk:ratio=0.2,mask=shared", "topk:ratio=0.2"))
    return std::fprintf(stderr, "cannot encode the shared-mask seeds\n"), 1;
  // device_state: EF21 receive steps, a payload of each family after the receiver's config
  // (codec byte, g dtype byte, rows, cols u16), and one configured for another codec.
  const char* const ef21_specs[][2] = {{"quant4", "quant:bits=4,group=row"},
                                       {"topk_row", "topk:k=9,scope=row"},
                                       {"randk_tensor", "randk:ratio=0.1,seed=2"},
                                       {"plain_f16", "plain:dtype=fp16"},
                                       {"fp8_e4m3", "fp8:format=e4m3,round=stochastic"},
                                       {"lowrank_r3", "lowrank:rank=3"}};
  for (size_t i = 0; i < sizeof ef21_specs / sizeof *ef21_specs; ++i) {
    spec e;
    if (!ok(parse_spec(ef21_specs[i][1], e))) return std::fprintf(stderr, "bad spec %s\n", ef21_specs[i][1]), 1;
    const shape shp(3, 70);
    const std::vector<uint8_t> payload = host_payload(e, pcfuzz::ramp(shp.size(), 41, 0.0625F), shp, randomness(3));
    if (payload.empty()) return std::fprintf(stderr, "cannot encode %s\n", ef21_specs[i][1]), 1;
    for (uint8_t other : {0, 1}) {
      std::vector<uint8_t> in{0, uint8_t(uint8_t(e.codec) - 1 + other), uint8_t(i), 3, 70, 0};
      in.insert(in.end(), payload.begin(), payload.end());
      write("device_state", std::string(ef21_specs[i][0]) + (other ? "_other_codec" : ""), in);
    }
  }
  // device_state, AQ-SGD: a genuine second message of the harness's sender for each codec
  // (samples 2 known, 4 and 5 new; and a warm-up step of 5, 1, 6), after its input head.
  for (uint8_t codec = 0; codec < 10; ++codec) {
    const uint8_t cols = uint8_t(7 + 5 * codec), type = codec % 3;
    pcfuzz::aqsgd_receivers h(pcfuzz::aqsgd_receivers::config(codec, cols, type));
    const std::vector<float> batch = pcfuzz::ramp(3 * h.c.cols, 7, 0.75F);
    for (bool warm : {false, true}) {
      const uint64_t ids[3] = {warm ? 5u : 2u, warm ? 1u : 4u, warm ? 6u : 5u};
      std::vector<uint8_t> msg(h.sender.message_bytes());
      size_t len = 0;
      if (!ok(h.sender.encode(ids, const_tensor_view{batch.data(), dtype::f32, shape(3, h.c.cols)}, warm, msg.data(),
                              msg.size(), 9, &len)))
        return std::fprintf(stderr, "cannot encode the AQ-SGD seed %d\n", codec), 1;
      std::vector<uint8_t> in{1, codec, cols, type, uint8_t(3 | (warm ? 8 : 0))};
      for (uint64_t id : ids) in.push_back(uint8_t(id - 1));
      in.insert(in.end(), msg.begin(), msg.begin() + long(len));
      write("device_state", "aqsgd_" + std::to_string(codec) + (warm ? "_warmup" : ""), in);
    }
  }
  // device_encode (its other seeds are the round-trip corpus): TopK and RandK, the case the
  // round-trip harness lacks. Layout: case 4 | mode | k | seed (2) | [vquant: 4] | shape (rows x
  // cols) | dtype | seed (8; top bit: keyed) | data mode | exponent | data.
  const uint8_t topk_modes[] = {0x00, 0x03, 0x06, 0x0e, 0x11, 0x22, 0x31, 0x43, 0x2a, 0x3b};
  for (size_t i = 0; i < sizeof topk_modes; ++i) {
    const uint8_t m = topk_modes[i];
    std::vector<uint8_t> in{4, m, uint8_t(i % 2 ? 0x85 : 12 * i + 3), uint8_t(i), 0};
    if ((1 + (m >> 4) % 4) == 4) in.insert(in.end(), {uint8_t(i), uint8_t(i * 3), 0, uint8_t(i * 5)});
    in.insert(in.end(), {1, uint8_t(1 + i % 4), uint8_t(40 + 37 * i), uint8_t(i % 3 == 0), uint8_t(i)});
    for (int b = 0; b < 8; ++b) in.push_back(uint8_t(b == 7 && i % 3 == 1 ? 0x80 : 13 * b + i));
    in.insert(in.end(), {1, 30});
    for (int b = 0; b < 96; ++b) in.push_back(uint8_t(pcfuzz::mix64(i * 131 + b)));
    write("device_encode", "topk_" + std::to_string(i), in);
  }
  std::printf("seeds written under tools/fuzz/corpus/{state_seq,policy_parse,checkpoint_restore,device_*}\n");
  return 0;
}
