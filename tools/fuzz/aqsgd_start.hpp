// The AQ-SGD state both receivers of the device_state harness start from (device_state.hpp),
// host only, so make_seeds.cpp can write messages for it: a configuration from three fuzzer
// bytes, and a sender and receiver after a genuine first message of samples 1, 2 and 3.
#pragma once

#include "common.hpp"

namespace pcfuzz {

// The AQ-SGD receivers' configuration, and the genuine first step both stores start from.
struct aqsgd_receivers {
  pipecodec::host::aqsgd_config c;
  pipecodec::host::aqsgd_state sender, receiver;

  static pipecodec::host::aqsgd_config config(uint8_t codec, uint8_t cols, uint8_t type) {
    static const char* const codecs[] = {"quant:bits=4,group=row", "quant:bits=2,group=32,round=stochastic",
                                         "plain:dtype=bf16", "topk:ratio=0.25,scope=row", "fp8:format=e5m2,group=row"};
    pipecodec::host::aqsgd_config c;
    PCFUZZ_CHECK(ok(pipecodec::parse_spec(codecs[codec % 5], c.codec)), "codec");
    PCFUZZ_CHECK(ok(pipecodec::parse_spec(codec & 8 ? "quant:bits=8,group=row" : "plain", c.warmup)), "warm-up");
    c.cols = 1 + cols % 40;
    c.state_type = dtype_from(type);
    c.capacity = 6;
    return c;
  }
  explicit aqsgd_receivers(const pipecodec::host::aqsgd_config& cfg) : c(cfg) {
    using namespace pipecodec;
    PCFUZZ_CHECK(ok(sender.init(c, 6)) && ok(receiver.init(c, 6)), "init");
    const uint64_t ids[3] = {1, 2, 3};
    const std::vector<float> batch = ramp(3 * c.cols, 13, 0.5F);
    std::vector<uint8_t> msg(sender.message_bytes());
    size_t len = 0;
    PCFUZZ_CHECK(ok(sender.encode(ids, const_tensor_view{batch.data(), dtype::f32, shape(3, c.cols)}, false,
                                  msg.data(), msg.size(), 0, &len)) &&
                     ok(receiver.decode(msg.data(), len, ids)),
                 "first step");
  }
};

}  // namespace pcfuzz
