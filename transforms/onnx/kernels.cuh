// kernels.cuh: what the kernels of kernels.cu share (every .cu file it includes includes
// this first): the grid-stride loop, the parameter lists of shapes (MAXR dimensions or 3
// spatial axes, each a separate long long) and the offset of a broadcast operand.

#pragma once

#include <math.h>

#define MAXR 6
#define GRID_LOOP(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

#define P6(n) long long n##0, long long n##1, long long n##2, long long n##3, long long n##4, long long n##5
#define A6(n) {n##0, n##1, n##2, n##3, n##4, n##5}

typedef unsigned char u8;

// offset maps the linear index i of a row-major block of dims (rank of them) to the
// element offset of an operand with strides st.
__device__ __forceinline__ long long offset(long long i, long long rank, const long long *dims, const long long *st)
{
    long long off = 0;
    for (long long d = rank - 1; d >= 0; d--) {
        long long n = dims[d];
        long long q = i / n;
        off += (i - q * n) * st[d];
        i = q;
    }
    return off;
}

// Convolution and pooling take 3 spatial axes (1-D and 2-D lead with axes of size 1),
// each list of them as 3 separate long longs.
#define P3(n) long long n##0, long long n##1, long long n##2
#define A3(n) {n##0, n##1, n##2}
