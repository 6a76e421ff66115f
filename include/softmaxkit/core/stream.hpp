// softmaxkit: the stream an op is queued on, without making public headers depend on CUDA.
#pragma once

namespace smk {

// A CUDA stream handle (cudaStream_t) passed through as an opaque pointer; the default, nullptr, is the legacy
// default stream. CPU ops ignore it and run synchronously on the calling thread.
struct Stream {
  void* handle = nullptr;
};

}  // namespace smk
