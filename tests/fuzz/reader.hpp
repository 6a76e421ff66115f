// The fuzz targets' one reader of a libFuzzer input: its bytes read as a stream of small choices (which op, which
// shape, which value), so that a mutation of one byte changes one choice. Past the input's end a Reader answers 0
// (PastEnd::zeros: every later choice is the first one, so a short input is a small, plain call), or bytes of a
// xorshift stream seeded by the input's FNV-1a hash (PastEnd::hashed: a short input still fills its tensors with
// varied values; fuzz_softmax_backward, whose checks would otherwise see mostly exact zeros).
#pragma once

#include <cstdint>
#include <cstring>

namespace smk::fuzz {

enum class PastEnd { zeros, hashed };

class Reader {
 public:
  Reader(const std::uint8_t* d, std::size_t n, PastEnd past = PastEnd::zeros) : d_(d), n_(n), past_(past) {
    if (past_ == PastEnd::hashed)
      for (std::size_t i = 0; i < n; ++i) state_ = (state_ ^ d[i]) * 0x100000001b3ull;  // FNV-1a
  }
  std::uint32_t byte() {
    if (i_ < n_) return d_[i_++];
    if (past_ == PastEnd::zeros) return 0;
    state_ ^= state_ << 13;  // xorshift64
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return static_cast<std::uint32_t>(state_ >> 56);
  }
  // A choice in [0, k): one byte for k ≤ 256, two above.
  std::uint32_t below(std::uint32_t k) { return k <= 1 ? 0 : (k <= 256 ? byte() % k : ((byte() << 8) | byte()) % k); }
  bool chance(std::uint32_t one_in) { return below(one_in) == 0; }
  // Any float bit pattern (four bytes, little-endian).
  float f32() {
    const std::uint32_t u = byte() | (byte() << 8) | (byte() << 16) | (byte() << 24);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }

 private:
  const std::uint8_t* d_;
  std::size_t n_, i_ = 0;
  PastEnd past_;
  std::uint64_t state_ = 0xcbf29ce484222325ull;  // FNV-1a's offset basis
};

}  // namespace smk::fuzz
