// Trilu's kernel (ops_trilu.go, launched by ops_trilu_gpu.go).

#include "kernels.cuh"

// trilu: y is x with the elements outside the triangle zeroed, matrices of rows x cols
// (n elements in all, each of size bytes: 1, 2, 4 or 8); (i, j) is kept when j-i >= k
// (upper) or j-i <= k (lower).
extern "C" __global__ void trilu(const void *x, void *y, long long n, long long rows, long long cols, long long k,
                                 long long upper, long long size)
{
    GRID_LOOP(t, n)
    {
        long long j = t % cols, i = (t / cols) % rows;
        bool keep = upper ? j - i >= k : j - i <= k;
        switch (size) {
        case 1: ((u8 *)y)[t] = keep ? ((const u8 *)x)[t] : 0; break;
        case 2: ((unsigned short *)y)[t] = keep ? ((const unsigned short *)x)[t] : 0; break;
        case 4: ((unsigned int *)y)[t] = keep ? ((const unsigned int *)x)[t] : 0; break;
        default: ((unsigned long long *)y)[t] = keep ? ((const unsigned long long *)x)[t] : 0; break;
        }
    }
}
