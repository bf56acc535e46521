// Pad's kernel (ops_slice.go, launched by ops_slice_gpu.go); Slice and Expand are
// strided copies (gpu_util.cu).

#include "kernels.cuh"

// pad_map: Pad's reflect and edge modes. Output element o (row-major over od) reads the
// input at, per axis, the index mapped from o - before: reflected (mode 0) or clamped
// (mode 1) into [0, id).
extern "C" __global__ void pad_map(char *dst, const char *src, long long n, long long esize, long long rank,
                                   long long mode, P6(od), P6(id), P6(b))
{
    long long odims[MAXR] = A6(od), idims[MAXR] = A6(id), before[MAXR] = A6(b);
    GRID_LOOP(o, n)
    {
        long long rest = o, off = 0, stride = 1;
        for (long long d = rank - 1; d >= 0; d--) {
            long long q = rest / odims[d];
            long long j = rest - q * odims[d] - before[d];
            rest = q;
            long long m = idims[d];
            if (mode == 1) {
                j = j < 0 ? 0 : (j >= m ? m - 1 : j);
            } else if (m == 1) {
                j = 0;
            } else {
                long long period = 2 * (m - 1);
                j = j % period;
                if (j < 0) j += period;
                if (j >= m) j = period - j;
            }
            off += j * stride;
            stride *= m;
        }
        switch (esize) {
        case 1: ((u8 *)dst)[o] = ((const u8 *)src)[off]; break;
        case 2: ((unsigned short *)dst)[o] = ((const unsigned short *)src)[off]; break;
        case 4: ((unsigned int *)dst)[o] = ((const unsigned int *)src)[off]; break;
        case 8: ((unsigned long long *)dst)[o] = ((const unsigned long long *)src)[off]; break;
        }
    }
}
