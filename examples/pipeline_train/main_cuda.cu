// pipeline_train_cuda: the training example on a GPU (cuBLAS layers, CUDA endpoints, payloads
// staged through host memory for the in-process or MPI transport); the driver, options and
// output are train_main.hpp's, as in the host build. Exits 77 (meson: skipped) without a CUDA
// device. Every stage (every MPI rank) uses the current device: with several GPUs, give each
// rank its own through CUDA_VISIBLE_DEVICES.
#include <cuda_runtime.h>

#include <cstdio>

#include "stage_cuda.cuh"
#include "train_main.hpp"

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("pipeline_train_cuda: no CUDA device, skipped\n");
    return 77;
  }
  return train::train_main<train::stage_cuda>(argc, argv, "pipeline_train_cuda");
}
