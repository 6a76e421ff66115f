// softmaxkit: build-wide macros shared by host and device code.
#pragma once

// SMK_HD marks functions callable from host and device code. Under a host-only compiler it expands to nothing,
// so every header in core/ stays includable from plain C++ translation units.
#if defined(__CUDACC__)
#define SMK_HD __host__ __device__
#define SMK_FORCEINLINE __forceinline__
#else
#define SMK_HD
#define SMK_FORCEINLINE inline
#endif
