// hd.cuh — the one macro that lets a helper be compiled for both the host device (g++) and the
// CUDA device (nvcc). Every math helper shared by the two devices is marked KV_HD, so the host
// ops and the GPU kernels run literally the same arithmetic.
#pragma once

#if defined(__CUDACC__)
#define KV_HD __host__ __device__ __forceinline__
#else
#define KV_HD inline
#endif
