// Umbrella header for nvcc: everything in pipecodec.hpp plus the CUDA backend.
#pragma once

#include "pipecodec.hpp"
#include "cuda/aqsgd.cuh"
#include "cuda/codec.cuh"
#include "cuda/ef.cuh"
#include "cuda/ef_sample.cuh"
#include "cuda/ef21.cuh"
#include "cuda/state_owners.cuh"
#include "cuda/warp_quant.cuh"
#include "policy/arithmetic_check.cuh"
#include "policy/cuda_endpoint.cuh"
