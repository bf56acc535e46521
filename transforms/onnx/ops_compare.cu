// Where's and Not's kernels (ops_compare.go, launched by ops_compare_gpu.go).

#include "kernels.cuh"

// where_any: out = cond ? x : y, elements of esize bytes, each operand at its broadcast
// strides over the output's dims.
extern "C" __global__ void where_any(char *out, const u8 *cond, const char *x, const char *y, long long n,
                                     long long esize, long long rank, P6(d), P6(sc), P6(sx), P6(sy))
{
    long long dims[MAXR] = A6(d), cs[MAXR] = A6(sc), xs[MAXR] = A6(sx), ys[MAXR] = A6(sy);
    GRID_LOOP(i, n)
    {
        bool c = cond[offset(i, rank, dims, cs)] != 0;
        long long o = c ? offset(i, rank, dims, xs) : offset(i, rank, dims, ys);
        const char *s = c ? x : y;
        switch (esize) {
        case 1: ((u8 *)out)[i] = ((const u8 *)s)[o]; break;
        case 2: ((unsigned short *)out)[i] = ((const unsigned short *)s)[o]; break;
        case 4: ((unsigned int *)out)[i] = ((const unsigned int *)s)[o]; break;
        case 8: ((unsigned long long *)out)[i] = ((const unsigned long long *)s)[o]; break;
        }
    }
}

// not_u8: y = !x over bools.
extern "C" __global__ void not_u8(const u8 *x, u8 *y, long long n)
{
    GRID_LOOP(i, n) { y[i] = x[i] == 0; }
}
