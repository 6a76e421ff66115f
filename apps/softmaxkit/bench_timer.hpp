// `softmaxkit bench`: the timer. CUDA events around one call at a time, with L2 flushed before each call, the way
// triton.testing.do_bench times (so our numbers and torch's, taken by scripts/compare_torch.py, are comparable).
// CUDA builds only; no CUDA types in this header.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace smk::app::bench {

class EventTimer {
 public:
  // `stream` is a cudaStream_t; `flush_bytes` is the size of the buffer written before each timed call (choose it
  // several times the L2, see flush_bytes_for()).
  EventTimer(void* stream, std::int64_t flush_bytes);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  // Runs `call` `reps` times on the stream; before each, an untimed cudaMemsetAsync of the flush buffer evicts
  // whatever the previous call left in L2. Each call is bracketed by its own pair of events; the host enqueues
  // everything and synchronizes once, so host-side work overlaps the flush and only device time is measured.
  // Returns each call's time in microseconds. Exceptions from `call` and CUDA errors propagate.
  std::vector<double> time(const std::function<void()>& call, int reps);

  std::int64_t flush_bytes() const { return flush_bytes_; }
  void* stream() const { return stream_; }

 private:
  void ensure_events(int reps);

  void* stream_;
  std::int64_t flush_bytes_;
  void* flush_ = nullptr;
  std::vector<void*> start_, stop_;  // cudaEvent_t
};

// The flush size for a device with `l2_bytes` of L2: four times the L2, at least 64 MiB (the H200 has 60 MB of
// L2, so 240 MB, about the 256 MB triton.testing.do_bench writes).
std::int64_t flush_bytes_for(std::int64_t l2_bytes);

// Synchronizes `stream` and turns any pending CUDA error into smk::Error(cuda_error) naming `what`.
void sync_and_check(void* stream, const char* what);

}  // namespace smk::app::bench
