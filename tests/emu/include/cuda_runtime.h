// The CUDA runtime as the emulated build of the kernel source sees it (tests only): the
// library's .cuh files and tests/gpu compile with g++ against these headers and run their
// kernels on the CPU (docs/CUDA.md, "The emulated GPU"). Not a general CUDA emulator: it
// supplies what pipecodec's kernels, tests, benchmarks and examples use.
#pragma once

#define PIPECODEC_EMU 1

#include "pipecodec_emu/api.hpp"
#include "pipecodec_emu/device.hpp"
#include "pipecodec_emu/launch.hpp"
