// softmaxkit (internal, host code): the policy of the fused merge's arrival counters kept per (device, stream)
// between calls (DecodeConfig::self_reset_counters; the kernel side is decode_mma.cu's merge_if_last). Kept apart
// from the CUDA calls (Ops below) so tests/cuda/attention/test_decode_counters.cpp can check the policy on the CPU.
//
// Why kept: the last block of each count sets it back to zero, so when the split kernel ends the buffer is all zeros
// again and the next call on the same stream (which starts after it, in stream order) needs no cudaMemsetAsync — a
// GPU operation of its own (~1 µs a call, measured: attention_cuda.hpp). Two streams never share a buffer, so calls
// running at once on two streams cannot mix their counts: the key is the stream's unique id (cudaStreamGetId; a new
// stream that reuses a destroyed one's handle gets a new id), and for the default streams (handle 0,
// cudaStreamPerThread) also the calling thread.
//
// Lifetime. At most `capacity` buffers are kept. A call leases its buffer (acquire) and gives it back (the Lease's
// destructor) only after its kernel is launched; a buffer is freed only while no lease holds it:
//   - a new key past capacity evicts the least recently used buffer that is not leased, after a device
//     synchronisation (its stream may still be running, or destroyed, so stream order cannot be used); if every kept
//     buffer is leased the call gets none (the caller zeroes counters in its workspace instead);
//   - a buffer that must grow is freed after its own stream synchronises, and only if no other call holds it (two
//     threads launching on one stream): otherwise the call gets none.
// Round 3 (commit f53820c) released its lock between the look-up and the launch: a thread that had looked up its
// buffer but not yet launched could see it freed by a thread whose new stream pushed it out (64 other streams'
// calls in between), and launch on freed memory. The lease closes that window.
// If a synchronisation or allocation is refused (say, another thread capturing a graph in global mode), the call
// gets none, and nothing that may be in use is freed. Whatever is kept at exit goes with the CUDA context.
#pragma once

#include <cstddef>
#include <iterator>
#include <list>
#include <mutex>
#include <utility>

namespace smk::cuda {

struct CounterKey {
  int device = 0;
  unsigned long long stream_id = 0;
  std::size_t thread = 0;  // the calling thread's hash for the default streams, else 0
  bool operator==(const CounterKey& o) const {
    return device == o.device && stream_id == o.stream_id && thread == o.thread;
  }
};

// Ops: the device side, each returning false (or null) where the runtime refuses:
//   bool sync_device(int device);                 every call that may count in that device's buffers has ended
//   bool sync_stream(void* stream);               this stream's earlier calls have ended
//   int* alloc_zeroed(std::size_t n, void* stream); n ints, zeroed in the stream's order (null: refused)
//   void release(int device, int* p);             free a buffer no call can still count in
template <typename Ops>
class CounterCache {
  struct Entry {
    CounterKey key;
    int* p = nullptr;
    std::size_t n = 0;
    int leases = 0;
  };
  using Iter = typename std::list<Entry>::iterator;

 public:
  class Lease {
   public:
    Lease() = default;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease(Lease&& o) noexcept : cache_(std::exchange(o.cache_, nullptr)), it_(o.it_), p_(o.p_) {}
    Lease& operator=(Lease&& o) noexcept {
      if (this != &o) {
        reset();
        cache_ = std::exchange(o.cache_, nullptr);
        it_ = o.it_;
        p_ = o.p_;
      }
      return *this;
    }
    ~Lease() { reset(); }
    int* get() const { return cache_ ? p_ : nullptr; }
    // Gives the buffer back: call it (or let the destructor) only after the kernel that counts in it is launched.
    void reset() {
      if (cache_ != nullptr) std::exchange(cache_, nullptr)->give_back(it_);
    }

   private:
    friend class CounterCache;
    Lease(CounterCache* c, Iter it) : cache_(c), it_(it), p_(it->p) {}
    CounterCache* cache_ = nullptr;
    Iter it_{};
    int* p_ = nullptr;
  };

  explicit CounterCache(std::size_t capacity, Ops ops = Ops{}) : capacity_(capacity), ops_(std::move(ops)) {}
  CounterCache(const CounterCache&) = delete;
  CounterCache& operator=(const CounterCache&) = delete;

  // A zeroed buffer of at least n counters for `key` (whose stream is `stream`), leased until the Lease goes; an
  // empty Lease where none can be had (the caller zeroes workspace counters instead).
  Lease acquire(const CounterKey& key, std::size_t n, void* stream) {
    std::lock_guard<std::mutex> lock(mu_);
    Iter it = kept_.begin();
    while (it != kept_.end() && !(it->key == key)) ++it;
    if (it == kept_.end()) {
      if (kept_.size() >= capacity_ && !evict_one()) return {};
      kept_.push_front(Entry{key});
    } else if (it != kept_.begin()) {
      kept_.splice(kept_.begin(), kept_, it);  // most recently used first
    }
    it = kept_.begin();
    if (it->n < n) {
      if (it->leases > 0) return {};  // another call on this stream holds it, not yet launched: leave it be
      const std::size_t want = n > 2 * it->n ? n : 2 * it->n;
      if (it->p != nullptr) {  // its stream's earlier calls may still be counting in it
        if (!ops_.sync_stream(stream)) return {};
        ops_.release(key.device, it->p);
        it->p = nullptr;
        it->n = 0;
      }
      it->p = ops_.alloc_zeroed(want, stream);
      if (it->p == nullptr) return {};  // n stays 0: retried (or evicted) later
      it->n = want;
    }
    ++it->leases;
    return Lease(this, it);
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return kept_.size();
  }

 private:
  // Frees the least recently used buffer that no call holds. False: every one is held, or the runtime refused.
  bool evict_one() {
    for (auto r = kept_.rbegin(); r != kept_.rend(); ++r) {
      if (r->leases > 0) continue;
      if (r->p != nullptr) {
        if (!ops_.sync_device(r->key.device)) return false;
        ops_.release(r->key.device, r->p);
      }
      kept_.erase(std::next(r).base());
      return true;
    }
    return false;
  }
  void give_back(Iter it) {
    std::lock_guard<std::mutex> lock(mu_);
    --it->leases;
  }

  mutable std::mutex mu_;
  std::list<Entry> kept_;  // most recently used first; a short list: a linear search is cheap
  std::size_t capacity_;
  Ops ops_;
};

}  // namespace smk::cuda
