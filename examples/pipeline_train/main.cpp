// pipeline_train: the training example on the CPU (OpenBLAS layers, host endpoints). The
// driver is train_main.hpp; main_cuda.cu is the same program on a GPU.
#include "stage.hpp"
#include "train_main.hpp"

int main(int argc, char** argv) {
#ifdef PIPECODEC_WITH_OPENBLAS
  // One BLAS thread, whatever the core count or OPENBLAS_NUM_THREADS: OpenBLAS's GEMM results
  // depend on its thread count (default: one per core), so without this the same seed trained
  // to different accuracies on different machines, and in-process (all cores) differently from
  // --mpi (a thread per rank). docs/TRAINING.md has the measured spread.
  openblas_set_num_threads(1);
#endif
  return train::train_main<train::stage>(argc, argv, "pipeline_train");
}
