// The kernels that the launches of gpu_util.go share: the strided copy of the
// data-movement operators (Transpose, Slice, Expand, Concat, Split, Pad's interior) and
// the fill.

#include "kernels.cuh"

template <typename T>
__device__ void copy_strided_t(T *dst, const T *src, long long n, long long rank, const long long *d, const long long *s,
                               const long long *t)
{
    GRID_LOOP(i, n) { dst[offset(i, rank, d, t)] = src[offset(i, rank, d, s)]; }
}

// copy_strided: the element at block index i (row-major over dims) is read at
// src + offset(i, s) and written at dst + offset(i, t), elements of esize bytes (1, 2, 4
// or 8). Transpose, Slice, Expand, Concat, Split and Pad's interior.
extern "C" __global__ void copy_strided(char *dst, const char *src, long long n, long long esize, long long rank, P6(d),
                                        P6(s), P6(t))
{
    long long dims[MAXR] = A6(d), ss[MAXR] = A6(s), ts[MAXR] = A6(t);
    switch (esize) {
    case 1: copy_strided_t((u8 *)dst, (const u8 *)src, n, rank, dims, ss, ts); break;
    case 2: copy_strided_t((unsigned short *)dst, (const unsigned short *)src, n, rank, dims, ss, ts); break;
    case 4: copy_strided_t((unsigned int *)dst, (const unsigned int *)src, n, rank, dims, ss, ts); break;
    case 8: copy_strided_t((unsigned long long *)dst, (const unsigned long long *)src, n, rank, dims, ss, ts); break;
    }
}

// fill: n elements of esize bytes, each the low esize bytes of bits.
extern "C" __global__ void fill(char *dst, long long n, long long esize, long long bits)
{
    GRID_LOOP(i, n)
    {
        switch (esize) {
        case 1: ((u8 *)dst)[i] = (u8)bits; break;
        case 2: ((unsigned short *)dst)[i] = (unsigned short)bits; break;
        case 4: ((unsigned int *)dst)[i] = (unsigned int)bits; break;
        case 8: ((unsigned long long *)dst)[i] = (unsigned long long)bits; break;
        }
    }
}
