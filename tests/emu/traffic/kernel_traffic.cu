// Memory traffic of the CUDA codecs, measured on the emulated GPU (tools/kernel-traffic;
// docs/CUDA.md, "Memory traffic per kernel"): for each spec and operation, per kernel its
// launches, the bytes it read and wrote in device memory (distinct 32-byte sectors), how many
// times it read the operation's input (the tensor for an encode, the payload for a decode),
// the bytes its lanes asked for, the sectors per warp-level request and the coalescing (the
// fewest sectors the requests' bytes need / the sectors they touched: 1 is perfect); then the
// operation's total against its floor (the input read once, the payload or output written
// once; the residual read and written once for EF). Then the state schemes' steady step (EF21,
// AQ-SGD, per-sample EF) for a fused and a non-fused codec. Inputs are fp32, and fp16 and bf16
// for a few specs; TopK's shared-mask mode encodes and decodes at a mask's positions (the mask
// read once more in the floor). CSV on stdout, one row per kernel and a "total" row per
// operation.
//   kernel_traffic [ELEMENTS] [FILTER] [fp32]  ELEMENTS (default 2^20) inputs, as 1024 rows
//                       (row-scoped and lowrank specs) or one row; FILTER: specs containing it;
//                       fp32: fp32 inputs only
#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../common/data.hpp"
#include "pipecodec/pipecodec.cuh"

using namespace pipecodec;

namespace {

struct device_bytes {
  void* p = nullptr;
  explicit device_bytes(size_t n) { cudaMalloc(&p, n == 0 ? 1 : n); }
  ~device_bytes() { cudaFree(p); }
  device_bytes(const device_bytes&) = delete;
  device_bytes& operator=(const device_bytes&) = delete;
};

enum class op { encode, decode, ef_encode, ef21_encode, ef21_decode, aqsgd_encode, aqsgd_decode, ef_sample_encode };
const char* op_name(op o) {
  static const char* const names[] = {"encode",       "decode",       "ef_encode",   "ef21_encode",
                                      "ef21_decode",  "aqsgd_encode", "aqsgd_decode", "ef_sample_encode"};
  return names[int(o)];
}

double ratio(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : double(a) / double(b); }

void print_row(op o, const char* text, dtype t, const shape& shp, const pipecodec_emu::kernel_traffic& k,
               const char* floor, uint64_t watched) {
  std::printf("%s,\"%s\",%s,%" PRIu64 ",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%.2f,%" PRIu64 ",%.2f,%.3f\n",
              op_name(o), text, to_string(t), shp.size(), k.name.c_str(), k.launches, k.bytes_read, k.bytes_written,
              floor, ratio(k.watched_read, watched), k.lane_bytes, ratio(k.request_sectors, k.requests),
              ratio(k.ideal_sectors, k.request_sectors));
}

// Stops counting and prints the kernels that ran since counting started and the operation's
// total against `floor` bytes; false when nothing was counted (a build without clang's
// load/store instrumentation).
bool report(op o, const char* text, const shape& shp, uint64_t floor, uint64_t watched, dtype t = dtype::f32) {
  pipecodec_emu::kernel_traffic total;
  total.name = "total";
  pipecodec_emu::count_traffic(false);
  for (const pipecodec_emu::kernel_traffic& k : pipecodec_emu::take_traffic()) {
    print_row(o, text, t, shp, k, ",", watched);
    total.launches += k.launches;
    total.bytes_read += k.bytes_read;
    total.bytes_written += k.bytes_written;
    total.watched_read += k.watched_read;
    total.lane_bytes += k.lane_bytes;
    total.requests += k.requests;
    total.request_sectors += k.request_sectors;
    total.ideal_sectors += k.ideal_sectors;
  }
  const std::string f =
      std::to_string(floor) + "," + std::to_string(ratio(total.bytes_read + total.bytes_written, floor));
  print_row(o, text, t, shp, total, f.c_str(), watched);
  std::fflush(stdout);
  return total.requests > 0;
}

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "kernel_traffic: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

bool check(status s, const char* what, const char* text) {
  if (ok(s)) return true;
  std::fprintf(stderr, "kernel_traffic: %s of %s: %s\n", what, text, to_string(s));
  return false;
}

// The device's verdict on a decode (its workspace), after the stream has run: a rejected
// payload would measure the wrong path.
bool device_ok(const void* workspace, const char* what, const char* text) {
  status verdict = status::cuda_error;
  return check(cuda::read_status(workspace, &verdict, nullptr), what, text) &&
         check(cudaDeviceSynchronize(), what) && check(verdict, what, text);
}

shape shape_for(const char* text, uint64_t n) {
  const bool rows = std::strstr(text, "scope=row") != nullptr || std::strstr(text, "group=row") != nullptr ||
                    std::strncmp(text, "lowrank:", 8) == 0;
  return rows ? shape(1024, n / 1024) : shape(n);
}

// Encode and decode (and an EF step, for the codecs EF fuses) of one spec with inputs of
// dtype `in_t`; false on an error.
bool measure(const char* text, uint64_t n, dtype in_t, bool& counted) {
  spec s;
  if (!check(parse_spec(text, s), "parse", text)) return false;
  const shape shp = shape_for(text, n);
  const std::vector<uint8_t> x = testdata::as_bytes(testdata::uniform(shp.size(), 7), in_t);
  const size_t cap = encoded_bytes(s, shp), wsb = std::max(workspace_bytes(s, shp), cuda::ef_workspace_bytes(s, shp));
  device_bytes in(x.size()), payload(cap), ws(wsb), out(shp.size() * 4), residual(shp.size() * 4);
  if (!check(cudaMemcpy(in.p, x.data(), x.size(), cudaMemcpyHostToDevice), "copy in")) return false;
  if (!check(cudaMemset(residual.p, 0, shp.size() * 4), "memset")) return false;
  const const_tensor_view input{in.p, in_t, shp};
  size_t len = 0;

  pipecodec_emu::count_traffic(true, in.p, x.size());
  if (!check(cuda::encode(s, input, payload.p, cap, ws.p, wsb, randomness(5), nullptr, &len), "encode", text) ||
      !check(cudaDeviceSynchronize(), "encode"))
    return false;
  counted = report(op::encode, text, shp, x.size() + len, x.size(), in_t) || counted;

  pipecodec_emu::count_traffic(true, payload.p, len);

  const tensor_view output{out.p, in_t, shp};
  const bool sparse = s.codec == codec_id::topk || s.codec == codec_id::randk;
  if (!check(sparse ? cuda::decode_topk(payload.p, len, output, ws.p, wsb, nullptr, s.codec)
                    : cuda::decode(payload.p, len, output, ws.p, wsb, nullptr),
             "decode", text) ||
      !check(cudaDeviceSynchronize(), "decode") || !device_ok(ws.p, "decode", text))
    return false;
  report(op::decode, text, shp, len + x.size(), len, in_t);

  if (s.codec == codec_id::quant && in_t == dtype::f32) {
    pipecodec_emu::count_traffic(true, in.p, x.size());
    if (!check(cuda::ef_encode(s, input, tensor_view{residual.p, dtype::f32, shp}, payload.p, cap, ws.p, wsb,
                               randomness(5), nullptr, &len),
               "ef_encode", text) ||
        !check(cudaDeviceSynchronize(), "ef_encode"))
      return false;
    report(op::ef_encode, text, shp, x.size() + len + 2 * shp.size() * 4, x.size());
  }
  return true;
}

// TopK's shared-mask mode: the values of the input at the positions of a mask (a TopK payload
// of the same shape, scope and k, not counted), encoded and decoded. Floors: the input (the
// payload) read once, the mask's bytes read once, the payload (the output) written once.
bool measure_shared(const char* text, uint64_t n) {
  spec s;
  if (!check(parse_spec(text, s), "parse", text)) return false;
  spec ms = s;
  ms.topk.shared_mask = false;
  const shape shp = shape_for(text, n);
  const std::vector<uint8_t> x = testdata::as_bytes(testdata::uniform(shp.size(), 7), dtype::f32);
  const size_t mcap = encoded_bytes(ms, shp), cap = encoded_bytes(s, shp);
  const size_t wsb = std::max({workspace_bytes(s, shp), workspace_bytes(ms, shp),
                               size_t(detail::workspace_request(detail::topk_decode_workspace(shp.size(), true)))});
  device_bytes in(x.size()), mask(mcap), payload(cap), ws(wsb), out(x.size());
  if (!check(cudaMemcpy(in.p, x.data(), x.size(), cudaMemcpyHostToDevice), "copy in")) return false;
  const const_tensor_view input{in.p, dtype::f32, shp};
  size_t mlen = 0, len = 0;
  if (!check(cuda::encode(ms, input, mask.p, mcap, ws.p, wsb, randomness(5), nullptr, &mlen), "mask", text) ||
      !check(cudaDeviceSynchronize(), "mask"))
    return false;
  pipecodec_emu::count_traffic(true, in.p, x.size());
  if (!check(cuda::encode_shared(s, input, mask.p, mlen, payload.p, cap, ws.p, wsb, 5, nullptr, &len),
             "encode_shared", text) ||
      !check(cudaDeviceSynchronize(), "encode_shared") || !device_ok(ws.p, "encode_shared", text))
    return false;
  report(op::encode, text, shp, x.size() + mlen + len, x.size());
  pipecodec_emu::count_traffic(true, payload.p, len);
  if (!check(cuda::decode_shared(payload.p, len, mask.p, mlen, tensor_view{out.p, dtype::f32, shp}, ws.p, wsb,
                                 nullptr),
             "decode_shared", text) ||
      !check(cudaDeviceSynchronize(), "decode_shared") || !device_ok(ws.p, "decode_shared", text))
    return false;
  report(op::decode, text, shp, len + mlen + x.size(), len);
  return true;
}

// The state schemes' steady step with codec `text`: EF21's sender and receiver (fp32 g), and the
// second batch of the same 1024 samples through AQ-SGD's sender and receiver and per-sample EF
// (a store of `store` dtype in device memory), the first batch having filled the stores. Floors:
// the batch (or payload) read once, the state read and written once, the payload written once.
bool measure_states(const char* text, uint64_t n, dtype store) {
  spec s;
  if (!check(parse_spec(text, s), "parse", text)) return false;
  const shape shp(1024, n / 1024);
  const uint64_t state_bytes = shp.size() * dtype_bytes(store);
  const std::vector<uint8_t> x = testdata::as_bytes(testdata::uniform(shp.size(), 9), dtype::f32);
  device_bytes in(x.size());
  if (!check(cudaMemcpy(in.p, x.data(), x.size(), cudaMemcpyHostToDevice), "copy in")) return false;
  const const_tensor_view batch{in.p, dtype::f32, shp};
  const std::string label = std::string(text) + (store == dtype::f16 ? " (fp16 state)" : "");
  size_t len = 0;
  if (store == dtype::f32) {
    cuda::ef21_state tx, rx;
    if (!check(tx.init(s, shp, store, nullptr), "ef21 init", text) ||
        !check(rx.init(s, shp, store, nullptr), "ef21 init", text))
      return false;
    device_bytes payload(tx.payload_bytes());
    pipecodec_emu::count_traffic(true, in.p, x.size());
    if (!check(tx.encode(batch, payload.p, tx.payload_bytes(), randomness(3), nullptr, &len), "ef21 encode", text) ||
        !check(cudaDeviceSynchronize(), "ef21 encode"))
      return false;
    report(op::ef21_encode, label.c_str(), shp, x.size() + 2 * state_bytes + len, x.size());
    pipecodec_emu::count_traffic(true, payload.p, len);
    if (!check(rx.decode(payload.p, len, tensor_view{}, nullptr), "ef21 decode", text) ||
        !check(cudaDeviceSynchronize(), "ef21 decode") || !device_ok(rx.workspace(), "ef21 decode", text))
      return false;
    report(op::ef21_decode, label.c_str(), shp, len + 2 * state_bytes, len);
  }
  aqsgd_config c;
  c.codec = s;
  c.cols = shp.cols;
  c.state_type = store;
  c.capacity = shp.rows;
  std::vector<uint64_t> ids(shp.rows);
  for (uint64_t i = 0; i < ids.size(); ++i) ids[i] = 1000 + i;
  cuda::aqsgd_state tx, rx;
  cuda::ef_sample_state ef;
  if (!check(tx.init(c, shp.rows, false, nullptr), "aqsgd init", text) ||
      !check(rx.init(c, shp.rows, false, nullptr), "aqsgd init", text) ||
      !check(ef.init(c, shp.rows, false, nullptr), "ef_sample init", text))
    return false;
  device_bytes message(tx.message_bytes()), payload(ef.payload_bytes());
  for (int step = 0; step < 2; ++step) {
    if (step == 1) pipecodec_emu::count_traffic(true, in.p, x.size());
    if (!check(tx.encode(ids.data(), batch, false, message.p, tx.message_bytes(), 7, nullptr, &len), "aqsgd encode",
               text) ||
        !check(cudaDeviceSynchronize(), "aqsgd encode"))
      return false;
    if (step == 1) report(op::aqsgd_encode, label.c_str(), shp, x.size() + 2 * state_bytes + len, x.size());
    if (step == 1) pipecodec_emu::count_traffic(true, message.p, len);
    if (!check(rx.decode(message.p, len, ids.data(), shp.rows, false, tensor_view{}, nullptr), "aqsgd decode", text) ||
        !check(cudaDeviceSynchronize(), "aqsgd decode") || !device_ok(rx.workspace(), "aqsgd decode", text) ||
        !check(rx.commit(), "aqsgd commit", text))
      return false;
    if (step == 1) report(op::aqsgd_decode, label.c_str(), shp, len + 2 * state_bytes, len);
    if (step == 1) pipecodec_emu::count_traffic(true, in.p, x.size());
    if (!check(ef.encode(ids.data(), batch, payload.p, ef.payload_bytes(), 7, nullptr, &len), "ef_sample encode",
               text) ||
        !check(cudaDeviceSynchronize(), "ef_sample encode"))
      return false;
    if (step == 1) report(op::ef_sample_encode, label.c_str(), shp, x.size() + 2 * state_bytes + len, x.size());
  }
  return true;
}

const char* const specs[] = {
    "quant:bits=8,group=128",
    "quant:bits=4,group=128",
    "quant:bits=2,group=128",
    "quant:bits=4,group=128,round=stochastic",
    "quant:bits=4,group=row",
    "quant:bits=4,group=tensor",
    "quant:bits=4,group=128,rotate=hadamard,rotate_block=256",
    "quant:bits=4,group=128,outliers=2",
    "fp8:format=e4m3",
    "mx:format=fp4_e2m1",
    "plain:dtype=bf16",
    "topk:ratio=0.01,scope=tensor",
    "topk:ratio=0.1,scope=tensor",
    "topk:ratio=0.01,scope=row",
    "topk:ratio=0.1,scope=row,values=quant,bits=4",
    "randk:ratio=0.1,scope=tensor",
    "lowrank:rank=4",
};

// Specs measured with fp16 and bf16 inputs too.
const char* const half_specs[] = {"quant:bits=4,group=128", "fp8:format=e4m3", "plain:dtype=bf16",
                                  "topk:ratio=0.01,scope=tensor"};

// TopK's shared-mask mode (the mask: the same spec without mask=shared).
const char* const shared_specs[] = {"topk:ratio=0.1,scope=row,mask=shared"};

// Codecs of the state schemes' rows: fused (quantization) and not (TopK).
const char* const state_specs[] = {"quant:bits=4,group=128", "topk:ratio=0.1,scope=row"};

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : uint64_t(1) << 20;
  const char* filter = argc > 2 ? argv[2] : "";
  const bool fp32_only = argc > 3 && std::strcmp(argv[3], "fp32") == 0;
  if (n < 1024 || n % 1024 != 0) {
    std::fprintf(stderr, "usage: kernel_traffic [ELEMENTS (a multiple of 1024)] [FILTER] [fp32]\n");
    return 2;
  }
  std::printf("op,spec,dtype,elements,kernel,launches,bytes_read,bytes_written,floor_bytes,ratio_to_floor,input_reads,"
              "lane_bytes,sectors_per_request,coalescing\n");
  bool counted = false;
  for (const char* text : specs) {
    if (std::strstr(text, filter) == nullptr) continue;
    std::fprintf(stderr, "kernel_traffic: %s\n", text);
    if (!measure(text, n, dtype::f32, counted)) return 1;
  }
  for (const char* text : half_specs) {
    if (fp32_only || std::strstr(text, filter) == nullptr) continue;
    std::fprintf(stderr, "kernel_traffic: %s, fp16 and bf16 inputs\n", text);
    for (dtype t : {dtype::f16, dtype::bf16})
      if (!measure(text, n, t, counted)) return 1;
  }
  for (const char* text : shared_specs) {
    if (std::strstr(text, filter) == nullptr) continue;
    std::fprintf(stderr, "kernel_traffic: %s\n", text);
    if (!measure_shared(text, n)) return 1;
  }
  for (const char* text : state_specs) {
    if (std::strstr(text, filter) == nullptr) continue;
    std::fprintf(stderr, "kernel_traffic: state schemes, %s\n", text);
    // fp16 stores with the fused codec only: the non-fused path's scratch is fp32 either way.
    for (dtype store : {dtype::f32, dtype::f16})
      if ((store == dtype::f32 || std::strncmp(text, "quant:", 6) == 0) && !measure_states(text, n, store)) return 1;
  }
  if (!counted) {
    std::fprintf(stderr, "kernel_traffic: no access was counted: build it with clang (tools/kernel-traffic)\n");
    return 77;
  }
  return 0;
}
