// The device fuzz harness table, as harnesses.hpp's for the host: X(name, extra seed
// directory). These harnesses compare the CUDA backend, run on the emulated GPU (tests/emu),
// with the host backend, so they link the emulator: tools/fuzz/run builds them with clang and
// libFuzzer, and the meson test "fuzz replay (emulated GPU)" replays their inputs. Their bodies
// are compiled once, in device_harnesses.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pcfuzz {
int fuzz_device_decode(const uint8_t* data, size_t size);  // device_decode.hpp
int fuzz_device_encode(const uint8_t* data, size_t size);  // device_encode.hpp
int fuzz_device_state(const uint8_t* data, size_t size);   // device_state.hpp
}  // namespace pcfuzz

#define PCFUZZ_DEVICE_HARNESSES(X) \
  X(device_decode, "")             \
  X(device_encode, "tools/fuzz/corpus/roundtrip") \
  X(device_state, "")
