// `softmaxkit bench`: cuDNN's softmax as an anchor on the same shapes (cudnnSoftmaxForward / cudnnSoftmaxBackward,
// "accurate" for softmax and "log" for log-softmax). Optional: built when CMake found cuDNN (the CUDA toolkit's, or
// the nvidia-cudnn Python wheel's); otherwise the anchor reports "not built". CUDA builds only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "bench_spec.hpp"

namespace smk::app::bench {

// True when this binary was linked against cuDNN.
bool cudnn_built() noexcept;

class CudnnAnchor {
 public:
  // Creates a cuDNN handle bound to `stream` (a cudaStream_t). Throws smk::Error(unsupported) when cuDNN was not
  // built in or cannot start on this machine, with cuDNN's own message.
  explicit CudnnAnchor(void* stream);
  ~CudnnAnchor();
  CudnnAnchor(const CudnnAnchor&) = delete;
  CudnnAnchor& operator=(const CudnnAnchor&) = delete;

  // cuDNN's version at run time, e.g. "9.19.0".
  std::string version() const;
  // cuDNN has no logsumexp; it serves the other four ops.
  static bool serves(Op op) noexcept;
  // "accurate" (softmax and its backward) or "log" (log-softmax and its backward).
  static const char* algorithm(Op op) noexcept;

  // Describes a contiguous rows × cols tensor of `dtype` and returns a call that runs the op once:
  //   forward:  out = op(in)             (`dy` unused)
  //   backward: out = dx given y = `in` and `dy`
  // Throws smk::Error(unsupported) when cuDNN refuses the dtype or shape (its descriptors take 32-bit sizes).
  std::function<void()> prepare(Op op, DType dtype, std::int64_t rows, std::int64_t cols, void* out,
                                const void* in, const void* dy);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace smk::app::bench
