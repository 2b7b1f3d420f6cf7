// The emulated cuBLAS subset (include/cublas_v2.h).
#include <cublas_v2.h>

struct pipecodec_emu_cublas {
  cudaStream_t stream = nullptr;
};

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new pipecodec_emu_cublas;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
  }
  return "unknown cuBLAS status";
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                           const float* beta, float* C, int ldc) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
  if (m < 0 || n < 0 || k < 0 || alpha == nullptr || beta == nullptr || ldc < (m > 1 ? m : 1) ||
      lda < ((ta ? k : m) > 1 ? (ta ? k : m) : 1) || ldb < ((tb ? n : k) > 1 ? (tb ? n : k) : 1))
    return CUBLAS_STATUS_INVALID_VALUE;
  const float a = *alpha, b = *beta;  // host pointer mode: read at the call
  const cudaError_t e = pipecodec_emu::enqueue_host_work(handle->stream, "cublasSgemm", [=] {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        float s = 0.0F;
        for (int p = 0; p < k; ++p) {
          const float x = ta ? A[p + size_t(i) * size_t(lda)] : A[i + size_t(p) * size_t(lda)];
          const float y = tb ? B[j + size_t(p) * size_t(ldb)] : B[p + size_t(j) * size_t(ldb)];
          s += x * y;
        }
        float& c = C[i + size_t(j) * size_t(ldc)];
        c = b == 0.0F ? a * s : a * s + b * c;  // beta = 0: C is not read, as in cuBLAS
      }
  });
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
