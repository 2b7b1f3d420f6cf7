// The device harness bodies, in one translation unit: the only one that instantiates the
// CUDA backend's kernels for the harnesses (the slow part of their build).
#include "device_harnesses.hpp"

#include "device_encode.hpp"  // and device_decode.hpp
#include "device_state.hpp"
