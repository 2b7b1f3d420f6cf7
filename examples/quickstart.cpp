// Quickstart: compress a tensor to 4 bits per value on the CPU and get it back.
#include <pipecodec/pipecodec.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace pc = pipecodec;

int main() {
  // A batch of 8 activation vectors of 1024 features.
  const pc::shape shp{8, 1024};
  std::vector<float> act(shp.size());
  for (size_t i = 0; i < act.size(); ++i) act[i] = std::sin(0.01F * float(i));

  // 1. What to do: 4-bit min-max quantization in groups of 128, fp16 scales.
  pc::spec s;
  std::string why;
  if (!pc::ok(pc::parse_spec("quant:bits=4,group=128,scale_dtype=fp16", s, &why))) {
    std::fprintf(stderr, "spec: %s\n", why.c_str());  // names the bad key or value
    return 1;
  }

  // 2. Sizes are known before any data is seen: allocate once, reuse every step.
  std::vector<uint8_t> payload(pc::encoded_bytes(s, shp));
  std::vector<uint8_t> workspace(pc::workspace_bytes(s, shp));

  // 3. Encode into the payload: these bytes are what travels (MPI, NCCL, a socket, a file).
  size_t sent = 0;
  pc::status st = pc::host::encode(s, pc::const_tensor_view{act.data(), pc::dtype::f32, shp}, payload.data(),
                                   payload.size(), workspace.data(), workspace.size(), /*seed=*/0, &sent);
  if (!pc::ok(st)) {
    std::fprintf(stderr, "encode: %s\n", pc::to_string(st));
    return 1;
  }

  // 4. The receiver decodes the self-describing payload into a tensor of any dtype.
  std::vector<float> back(shp.size());
  st = pc::host::decode(payload.data(), sent, pc::tensor_view{back.data(), pc::dtype::f32, shp});
  if (!pc::ok(st)) {  // a truncated or corrupted payload is reported, never trusted
    std::fprintf(stderr, "decode: %s\n", pc::to_string(st));
    return 1;
  }

  float max_err = 0;
  for (size_t i = 0; i < act.size(); ++i) max_err = std::fmax(max_err, std::fabs(act[i] - back[i]));
  std::printf("%zu bytes -> %zu bytes (%.1fx), max error %.4f\n", act.size() * sizeof(float), sent,
              double(act.size() * sizeof(float)) / double(sent), double(max_err));
  return max_err < 0.07F ? 0 : 1;  // 4 bits over a range of 2: half a step is 1/15
}
