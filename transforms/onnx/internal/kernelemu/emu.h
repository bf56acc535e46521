// emu.h: what a CUDA kernel source of beamgpu's needs to compile as host C++, one thread
// at a time. The launch (kernelemu.cpp) runs a grid's threads in sequence, setting
// blockIdx and threadIdx before each; the kernels it serves use no shared memory, no
// __syncthreads and no warp functions (compiling them here fails).
#pragma once
#include <cmath>
#include <math.h>

struct emu_dim3 {
    unsigned int x, y, z;
};
extern thread_local emu_dim3 blockIdx, threadIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
using std::isinf;
