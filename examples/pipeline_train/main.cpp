// pipeline_train: the training example on the CPU (OpenBLAS layers, host endpoints). The
// driver is train_main.hpp; main_cuda.cu is the same program on a GPU.
#include "stage.hpp"
#include "train_main.hpp"

int main(int argc, char** argv) { return train::train_main<train::stage>(argc, argv, "pipeline_train"); }
