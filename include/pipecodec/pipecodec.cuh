// Umbrella header for nvcc: everything in pipecodec.hpp plus the CUDA backend.
#pragma once

#include "pipecodec.hpp"
#include "cuda/codec.cuh"
#include "cuda/warp_quant.cuh"
