// `softmaxkit bench`: the cuDNN anchor. Compiled in every CUDA build; calls cuDNN only when SMK_BENCH_HAS_CUDNN.
#include "bench_cudnn.hpp"

#include <climits>
#include <string>

#include "softmaxkit/core/error.hpp"

#if SMK_BENCH_HAS_CUDNN
#include <cudnn.h>
#endif

namespace smk::app::bench {

bool CudnnAnchor::serves(Op op) noexcept { return op != Op::logsumexp && !is_cross_entropy(op); }

const char* CudnnAnchor::algorithm(Op op) noexcept {
  return op == Op::log_softmax || op == Op::log_softmax_backward ? "log" : "accurate";
}

#if SMK_BENCH_HAS_CUDNN

bool cudnn_built() noexcept { return true; }

namespace {

void check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw_unsupported("bench (cuDNN anchor)", std::string(what) + ": " + cudnnGetErrorString(status));
}

// One tensor descriptor, destroyed with the call that uses it.
struct Descriptor {
  cudnnTensorDescriptor_t desc = nullptr;
  Descriptor() { check(cudnnCreateTensorDescriptor(&desc), "cudnnCreateTensorDescriptor"); }
  ~Descriptor() { cudnnDestroyTensorDescriptor(desc); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
};

}  // namespace

struct CudnnAnchor::Impl {
  cudnnHandle_t handle = nullptr;
};

CudnnAnchor::CudnnAnchor(void* stream) : impl_(std::make_unique<Impl>()) {
  check(cudnnCreate(&impl_->handle), "cudnnCreate");
  check(cudnnSetStream(impl_->handle, static_cast<cudaStream_t>(stream)), "cudnnSetStream");
}

CudnnAnchor::~CudnnAnchor() {
  if (impl_ && impl_->handle) cudnnDestroy(impl_->handle);
}

std::string CudnnAnchor::version() const {
  const std::size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch since cuDNN 9
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::function<void()> CudnnAnchor::prepare(Op op, DType dtype, std::int64_t rows, std::int64_t cols, void* out,
                                           const void* in, const void* dy) {
  if (!serves(op)) throw_unsupported("bench (cuDNN anchor)", std::string("cuDNN has no ") + op_name(op));
  if (rows > INT_MAX || cols > INT_MAX || rows * cols > INT_MAX)
    throw_unsupported("bench (cuDNN anchor)", "cuDNN's tensor descriptors take 32-bit sizes");
  cudnnDataType_t type{};
  switch (dtype) {
    case DType::f32: type = CUDNN_DATA_FLOAT; break;
    case DType::f16: type = CUDNN_DATA_HALF; break;
    case DType::bf16: type = CUDNN_DATA_BFLOAT16; break;
    default: throw_unsupported("bench (cuDNN anchor)", std::string("dtype ") + dtype_name(dtype));
  }
  // Each row is one image of `cols` channels (N = rows, C = cols, H = W = 1); INSTANCE mode reduces over C·H·W.
  auto desc = std::make_shared<Descriptor>();
  check(cudnnSetTensor4dDescriptor(desc->desc, CUDNN_TENSOR_NCHW, type, static_cast<int>(rows),
                                   static_cast<int>(cols), 1, 1),
        "cudnnSetTensor4dDescriptor");
  const cudnnSoftmaxAlgorithm_t algo =
      op == Op::log_softmax || op == Op::log_softmax_backward ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE;
  const cudnnHandle_t handle = impl_->handle;
  // Scaling factors are float for float, half and bfloat16 data.
  static const float alpha = 1.0f, beta = 0.0f;
  std::function<void()> call;
  if (is_backward(op)) {
    call = [=] {
      check(cudnnSoftmaxBackward(handle, algo, CUDNN_SOFTMAX_MODE_INSTANCE, &alpha, desc->desc, in, desc->desc, dy,
                                 &beta, desc->desc, out),
            "cudnnSoftmaxBackward");
    };
  } else {
    call = [=] {
      check(cudnnSoftmaxForward(handle, algo, CUDNN_SOFTMAX_MODE_INSTANCE, &alpha, desc->desc, in, &beta,
                                desc->desc, out),
            "cudnnSoftmaxForward");
    };
  }
  return call;
}

#else  // built without cuDNN

bool cudnn_built() noexcept { return false; }

struct CudnnAnchor::Impl {};

CudnnAnchor::CudnnAnchor(void*) {
  throw_unsupported("bench (cuDNN anchor)", "not built: CMake found no cuDNN (cudnn.h and libcudnn) at configure "
                    "time; see cmake/Dependencies.cmake");
}
CudnnAnchor::~CudnnAnchor() = default;
std::string CudnnAnchor::version() const { return "not built"; }
std::function<void()> CudnnAnchor::prepare(Op, DType, std::int64_t, std::int64_t, void*, const void*,
                                           const void*) {
  throw_unsupported("bench (cuDNN anchor)", "not built");
}

#endif

}  // namespace smk::app::bench
