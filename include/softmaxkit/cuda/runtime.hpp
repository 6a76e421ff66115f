// softmaxkit: the small CUDA runtime layer — error checks that name the failing call, RAII device buffers and
// streams. Requires the CUDA runtime headers; include it only from a CUDA-enabled build (SOFTMAXKIT_HAS_CUDA).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace smk::cuda {

// Throws smk::Error(cuda_error, "<what> failed at <file>:<line>: <cudaGetErrorString>") unless status is success.
void check(cudaError_t status, const char* what, const char* file, int line);

}  // namespace smk::cuda

// Wraps one CUDA runtime call; the error message quotes the call's source text.
#define SMK_CUDA_CHECK(call) ::smk::cuda::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports a bad launch configuration, naming the kernel.
#define SMK_CUDA_CHECK_LAUNCH(kernel_name) \
  ::smk::cuda::check(cudaGetLastError(), "launch of kernel " kernel_name, __FILE__, __LINE__)

namespace smk::cuda {

// Makes `ordinal` the calling thread's current device. Throws naming the ordinal when it does not exist.
void set_device(int ordinal);

// An owning, move-only allocation of `count` elements of T in device memory (cudaMalloc / cudaFree).
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) SMK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), count_ * sizeof(T)));
  }
  static DeviceBuffer from_host(std::span<const T> host) {
    DeviceBuffer b(host.size());
    if (!host.empty()) SMK_CUDA_CHECK(cudaMemcpy(b.data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice));
    return b;
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { release(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }

  // Synchronous copies (they wait for the whole device, so a preceding kernel has finished).
  std::vector<T> to_host() const {
    std::vector<T> host(count_);
    if (count_ > 0) SMK_CUDA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  void copy_from_host(std::span<const T> host) {
    if (host.size() != count_) check(cudaErrorInvalidValue, "DeviceBuffer::copy_from_host (size mismatch)", __FILE__, __LINE__);
    if (count_ > 0) SMK_CUDA_CHECK(cudaMemcpy(data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice));
  }
  // Sets every byte, e.g. 0xFF to poison an output with NaN before a test writes it.
  void fill_bytes(unsigned char value) {
    if (count_ > 0) SMK_CUDA_CHECK(cudaMemset(data_, value, count_ * sizeof(T)));
  }

 private:
  void release() noexcept {
    if (data_) cudaFree(data_);  // errors here cannot be reported from a destructor; the next checked call sees them
    data_ = nullptr;
  }
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// An owning CUDA stream (non-blocking with respect to the legacy default stream).
class StreamOwner {
 public:
  StreamOwner() { SMK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  StreamOwner(const StreamOwner&) = delete;
  StreamOwner& operator=(const StreamOwner&) = delete;
  ~StreamOwner() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t get() const { return stream_; }
  void synchronize() const { SMK_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace smk::cuda
