// softmaxkit: the one error type every public entry point throws.
//
// Every message names the operation and the argument at fault, e.g.
//   softmax: argument 'out': shape [2, 4] does not match 'in' shape [2, 3]
// so a user can fix the call without reading our source.
#pragma once

#include <stdexcept>
#include <string>

namespace smk {

enum class ErrorCode {
  invalid_argument,  // the caller passed something the contract forbids (shape, dtype, null data, aliasing, ...)
  unsupported,       // legal request that this backend or build does not provide (e.g. CUDA in a CPU-only build)
  cuda_error,        // a CUDA runtime call or kernel launch failed; the message names the call
  internal,          // a broken invariant inside softmaxkit: always a bug, please report it
};

const char* to_string(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// Throws Error(invalid_argument, "<op>: argument '<arg>': <what>").
[[noreturn]] void throw_invalid_argument(const char* op, const char* arg, const std::string& what);
// Throws Error(unsupported, "<op>: <what>").
[[noreturn]] void throw_unsupported(const char* op, const std::string& what);

}  // namespace smk
