// The policy of decode's kept arrival counters (src/cuda/attention/decode_counters.hpp), on the CPU with a fake
// device: a buffer is never freed while a call holds it (looked up, not yet launched), eviction takes the least
// recently used buffer nobody holds, growth and refusals fall back to "none" (the caller's memset path), and the
// number kept stays bounded. The last test is the race round 3 had: threads that hold a lease across a pause while
// many other "streams" come and go, each checking its buffer is still alive when it "launches".
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "cuda/attention/decode_counters.hpp"

namespace {

using smk::cuda::CounterKey;

// The fake device: allocations are heap arrays of zeros; what is alive, what was freed and how often each call ran
// are recorded. Shared by copies of the ops (the cache holds one by value).
struct FakeDevice {
  std::mutex mu;
  std::set<int*> alive;
  std::vector<int*> freed_order;
  int device_syncs = 0, stream_syncs = 0, allocs = 0;
  bool refuse_sync = false, refuse_alloc = false;
  ~FakeDevice() {
    for (int* p : alive) delete[] p;
    for (int* p : freed_order) delete[] p;
  }
  bool is_alive(int* p) {
    std::lock_guard<std::mutex> lock(mu);
    return alive.count(p) != 0;
  }
};

struct FakeOps {
  FakeDevice* dev;
  bool sync_device(int) {
    std::lock_guard<std::mutex> lock(dev->mu);
    ++dev->device_syncs;
    return !dev->refuse_sync;
  }
  bool sync_stream(void*) {
    std::lock_guard<std::mutex> lock(dev->mu);
    ++dev->stream_syncs;
    return !dev->refuse_sync;
  }
  int* alloc_zeroed(std::size_t n, void*) {
    std::lock_guard<std::mutex> lock(dev->mu);
    if (dev->refuse_alloc) return nullptr;
    ++dev->allocs;
    int* p = new int[n]();
    dev->alive.insert(p);
    return p;
  }
  void release(int, int* p) {
    std::lock_guard<std::mutex> lock(dev->mu);
    EXPECT_EQ(dev->alive.erase(p), 1u) << "freed twice or never allocated";
    dev->freed_order.push_back(p);  // not deleted before the test ends: a new buffer must not reuse the address
  }
};

using Cache = smk::cuda::CounterCache<FakeOps>;

CounterKey key(unsigned long long stream) { return CounterKey{0, stream, 0}; }

TEST(DecodeKeptCounters, SameStreamGetsTheSameZeroedBuffer) {
  FakeDevice dev;
  Cache cache(4, FakeOps{&dev});
  int* first = nullptr;
  {
    auto l = cache.acquire(key(1), 10, nullptr);
    ASSERT_NE(l.get(), nullptr);
    first = l.get();
    for (int i = 0; i < 10; ++i) EXPECT_EQ(first[i], 0);
  }
  auto again = cache.acquire(key(1), 10, nullptr);
  EXPECT_EQ(again.get(), first);
  EXPECT_EQ(dev.allocs, 1);
  auto other = cache.acquire(key(2), 10, nullptr);  // another stream: its own buffer
  EXPECT_NE(other.get(), first);
  auto thread_b = cache.acquire(CounterKey{0, 1, 99}, 10, nullptr);  // same default stream, another thread
  EXPECT_NE(thread_b.get(), first);
  auto device_b = cache.acquire(CounterKey{1, 1, 0}, 10, nullptr);
  EXPECT_NE(device_b.get(), first);
  EXPECT_EQ(dev.device_syncs, 0);
}

TEST(DecodeKeptCounters, EvictsTheLeastRecentlyUsedThatNobodyHolds) {
  FakeDevice dev;
  Cache cache(3, FakeOps{&dev});
  int* p[4];
  for (int s = 0; s < 3; ++s) p[s] = cache.acquire(key(s), 8, nullptr).get();
  (void)cache.acquire(key(0), 8, nullptr);  // 0 is now the most recently used: order 0, 2, 1
  auto held = cache.acquire(key(1), 8, nullptr);  // 1 becomes most recent and stays held: order 1, 0, 2
  p[3] = cache.acquire(key(3), 8, nullptr).get();  // evicts 2, the least recently used
  ASSERT_EQ(dev.freed_order.size(), 1u);
  EXPECT_EQ(dev.freed_order[0], p[2]);
  EXPECT_EQ(dev.device_syncs, 1);  // its stream may still be running: the device synchronised first
  EXPECT_EQ(cache.size(), 3u);
  // Order now 3, 1 (held), 0. Push 1 to the back: 4 evicts 0, 5 evicts 3 — never the held 1.
  (void)cache.acquire(key(0), 8, nullptr);  // 0, 3, 1
  (void)cache.acquire(key(3), 8, nullptr);  // 3, 0, 1
  (void)cache.acquire(key(4), 8, nullptr);  // 1 is least recent but held: 0 goes
  (void)cache.acquire(key(5), 8, nullptr);  // 3 goes
  EXPECT_TRUE(dev.is_alive(p[1]));
  EXPECT_EQ(held.get(), p[1]);
  ASSERT_EQ(dev.freed_order.size(), 3u);
  EXPECT_EQ(dev.freed_order[1], p[0]);
  EXPECT_EQ(dev.freed_order[2], p[3]);
  held.reset();
  (void)cache.acquire(key(6), 8, nullptr);  // now 1 may go: it is the least recent and nobody holds it
  EXPECT_FALSE(dev.is_alive(p[1]));
  EXPECT_EQ(cache.size(), 3u);
}

TEST(DecodeKeptCounters, EveryBufferHeldMeansNoneForANewStream) {
  FakeDevice dev;
  Cache cache(2, FakeOps{&dev});
  auto a = cache.acquire(key(1), 4, nullptr);
  auto b = cache.acquire(key(2), 4, nullptr);
  auto c = cache.acquire(key(3), 4, nullptr);
  EXPECT_EQ(c.get(), nullptr);
  EXPECT_EQ(dev.device_syncs, 0);
  EXPECT_TRUE(dev.freed_order.empty());
  EXPECT_EQ(cache.size(), 2u);
  // A second lease on a held stream's buffer is fine (two calls on one stream run in stream order).
  auto a2 = cache.acquire(key(1), 4, nullptr);
  EXPECT_EQ(a2.get(), a.get());
}

TEST(DecodeKeptCounters, GrowsOnlyWhenNobodyHoldsIt) {
  FakeDevice dev;
  Cache cache(4, FakeOps{&dev});
  int* small = nullptr;
  {
    auto l = cache.acquire(key(1), 4, nullptr);
    small = l.get();
    auto bigger = cache.acquire(key(1), 100, nullptr);  // held by l: not grown, none
    EXPECT_EQ(bigger.get(), nullptr);
    EXPECT_TRUE(dev.is_alive(small));
    EXPECT_EQ(dev.stream_syncs, 0);
  }
  auto grown = cache.acquire(key(1), 100, nullptr);
  ASSERT_NE(grown.get(), nullptr);
  EXPECT_FALSE(dev.is_alive(small));
  EXPECT_EQ(dev.stream_syncs, 1);  // its own stream synchronised before the old buffer went
  for (int i = 0; i < 100; ++i) EXPECT_EQ(grown.get()[i], 0);
  int* const big = grown.get();
  grown.reset();
  auto fits = cache.acquire(key(1), 50, nullptr);  // smaller requests reuse it
  EXPECT_EQ(fits.get(), big);
  EXPECT_EQ(dev.allocs, 2);
}

TEST(DecodeKeptCounters, RefusalsGiveNoneAndFreeNothingInUse) {
  FakeDevice dev;
  Cache cache(1, FakeOps{&dev});
  int* p = cache.acquire(key(1), 4, nullptr).get();
  dev.refuse_sync = true;
  EXPECT_EQ(cache.acquire(key(2), 4, nullptr).get(), nullptr);  // eviction needs a sync: refused
  EXPECT_EQ(cache.acquire(key(1), 64, nullptr).get(), nullptr);  // growth needs a sync: refused
  EXPECT_TRUE(dev.is_alive(p));
  dev.refuse_sync = false;
  dev.refuse_alloc = true;
  EXPECT_EQ(cache.acquire(key(2), 4, nullptr).get(), nullptr);  // evicts 1, then the allocation is refused
  dev.refuse_alloc = false;
  auto l = cache.acquire(key(2), 4, nullptr);  // retried
  EXPECT_NE(l.get(), nullptr);
  EXPECT_EQ(cache.size(), 1u);
}

// Round 3's race: a thread looks up its buffer, then (before its launch) other threads' new streams push it out.
// With the lease held across the "launch", the buffer must be alive there, every time.
TEST(DecodeKeptCounters, HeldBufferSurvivesManyOtherStreamsUntilLaunch) {
  FakeDevice dev;
  constexpr std::size_t kCapacity = 8;
  Cache cache(kCapacity, FakeOps{&dev});
  std::atomic<int> dead_at_launch{0}, launched{0}, none{0};
  std::atomic<unsigned long long> next_stream{1000};
  const auto worker = [&](int seed) {
    std::mt19937 rng(seed);
    for (int it = 0; it < 400; ++it) {
      // Half the calls reuse one of a few long-lived streams, half make a new one (pushing others out).
      const unsigned long long id = rng() % 2 ? rng() % 4 : next_stream.fetch_add(1);
      auto l = cache.acquire(key(id), 1 + rng() % 64, nullptr);
      if (l.get() == nullptr) {
        ++none;
        continue;
      }
      if (rng() % 4 == 0) std::this_thread::yield();  // the window between the look-up and the launch
      if (!dev.is_alive(l.get())) ++dead_at_launch;
      ++launched;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back(worker, t + 1);
  for (auto& t : threads) t.join();
  EXPECT_EQ(dead_at_launch.load(), 0);
  EXPECT_GT(launched.load(), 1000);
  EXPECT_LE(cache.size(), kCapacity);
  EXPECT_GT(dev.freed_order.size(), 100u);  // eviction did happen, many times
}

}  // namespace
