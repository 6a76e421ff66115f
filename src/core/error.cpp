#include "softmaxkit/core/error.hpp"

namespace smk {

const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::cuda_error: return "CUDA error";
    case ErrorCode::internal: return "internal error";
  }
  return "unknown error";
}

void throw_invalid_argument(const char* op, const char* arg, const std::string& what) {
  throw Error(ErrorCode::invalid_argument, std::string(op) + ": argument '" + arg + "': " + what);
}

void throw_unsupported(const char* op, const std::string& what) {
  throw Error(ErrorCode::unsupported, std::string(op) + ": " + what);
}

}  // namespace smk
