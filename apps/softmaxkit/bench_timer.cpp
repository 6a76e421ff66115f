// `softmaxkit bench`: CUDA-event timing with L2 flushed between calls.
#include "bench_timer.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "softmaxkit/cuda/runtime.hpp"

namespace smk::app::bench {

namespace {
cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }
}  // namespace

std::int64_t flush_bytes_for(std::int64_t l2_bytes) {
  return std::max<std::int64_t>(4 * l2_bytes, std::int64_t{64} << 20);
}

EventTimer::EventTimer(void* stream, std::int64_t flush_bytes) : stream_(stream), flush_bytes_(flush_bytes) {
  SMK_CUDA_CHECK(cudaMalloc(&flush_, static_cast<std::size_t>(flush_bytes_)));
}

EventTimer::~EventTimer() {
  for (void* e : start_) cudaEventDestroy(as_event(e));
  for (void* e : stop_) cudaEventDestroy(as_event(e));
  if (flush_) cudaFree(flush_);
}

void EventTimer::ensure_events(int reps) {
  while (static_cast<int>(start_.size()) < reps) {
    cudaEvent_t a = nullptr, b = nullptr;
    SMK_CUDA_CHECK(cudaEventCreate(&a));
    start_.push_back(a);
    SMK_CUDA_CHECK(cudaEventCreate(&b));
    stop_.push_back(b);
  }
}

std::vector<double> EventTimer::time(const std::function<void()>& call, int reps) {
  ensure_events(reps);
  const cudaStream_t s = as_stream(stream_);
  for (int i = 0; i < reps; ++i) {
    // The byte value changes every time so that no layer can skip a write it has already made.
    SMK_CUDA_CHECK(cudaMemsetAsync(flush_, i & 0xff, static_cast<std::size_t>(flush_bytes_), s));
    SMK_CUDA_CHECK(cudaEventRecord(as_event(start_[i]), s));
    call();
    SMK_CUDA_CHECK(cudaEventRecord(as_event(stop_[i]), s));
  }
  sync_and_check(stream_, "timed calls");
  std::vector<double> micros(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    SMK_CUDA_CHECK(cudaEventElapsedTime(&ms, as_event(start_[i]), as_event(stop_[i])));
    micros[static_cast<std::size_t>(i)] = 1000.0 * static_cast<double>(ms);
  }
  return micros;
}

void sync_and_check(void* stream, const char* what) {
  smk::cuda::check(cudaStreamSynchronize(as_stream(stream)), what, __FILE__, __LINE__);
  smk::cuda::check(cudaGetLastError(), what, __FILE__, __LINE__);
}

}  // namespace smk::app::bench
