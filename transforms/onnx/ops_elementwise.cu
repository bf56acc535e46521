// The binary elementwise operators' and the comparisons' kernels (ops_elementwise.go and
// ops_compare.go, launched by ops_elementwise_gpu.go).

#include "kernels.cuh"

// Binary operations (ops_elementwise.go's ewOp, in its order).
enum { EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_MAX, EW_MIN, EW_POW, EW_EQUAL, EW_LESS, EW_GREATER, EW_MOD, EW_FMOD, EW_PRELU };

// Mod's remainders (ops_mod.go): of floats C's fmod, in double; of integers 0 for a divisor
// of 0 or -1 (whose remainder is 0, and C's % of the most negative value by -1 undefined),
// floor's (the divisor's sign) or fmod's (the dividend's).
__device__ __forceinline__ float mod_of(long long, float x, float y) { return (float)fmod((double)x, (double)y); }
template <typename T> __device__ __forceinline__ T mod_of(long long op, T x, T y)
{
    if (y == 0 || y == -1) return 0;
    T r = x % y;
    if (op == EW_MOD && r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}

template <typename T> __device__ __forceinline__ T arith(long long op, T x, T y)
{
    switch (op) {
    case EW_MOD:
    case EW_FMOD: return mod_of(op, x, y);
    case EW_PRELU: return x < 0 ? y * x : x;
    case EW_ADD: return x + y;
    case EW_SUB: return x - y;
    case EW_MUL: return x * y;
    case EW_DIV: return x / y;
    case EW_MAX: return (y > x || y != y) ? y : x;
    case EW_MIN: return (y < x || y != y) ? y : x;
    }
    return x;
}

template <typename T>
__device__ void binary_t(long long op, const T *a, const T *b, char *c, long long n, long long rank,
                         const long long *d, const long long *sa, const long long *sb)
{
    GRID_LOOP(i, n)
    {
        T x = a[offset(i, rank, d, sa)], y = b[offset(i, rank, d, sb)];
        switch (op) {
        case EW_EQUAL: ((u8 *)c)[i] = x == y; break;
        case EW_LESS: ((u8 *)c)[i] = x < y; break;
        case EW_GREATER: ((u8 *)c)[i] = x > y; break;
        default: ((T *)c)[i] = arith(op, x, y);
        }
    }
}

// binary_f32: c = a op b, a and b read at their broadcast strides sa and sb over the
// output's dims (rank of them); comparisons write bools (bytes). Pow in double, rounded.
extern "C" __global__ void binary_f32(long long op, const float *a, const float *b, char *c, long long n,
                                      long long rank, P6(d), P6(sa), P6(sb))
{
    long long dims[MAXR] = A6(d), as[MAXR] = A6(sa), bs[MAXR] = A6(sb);
    if (op == EW_POW) {
        GRID_LOOP(i, n) { ((float *)c)[i] = (float)pow((double)a[offset(i, rank, dims, as)], (double)b[offset(i, rank, dims, bs)]); }
        return;
    }
    binary_t(op, a, b, c, n, rank, dims, as, bs);
}

// binary_i64 and binary_i32: Add, Sub, Mul, Max, Min, Mod, PRelu and the comparisons of
// integers (wrapping as C; Div and Pow of integers run on the host).
extern "C" __global__ void binary_i64(long long op, const long long *a, const long long *b, char *c, long long n,
                                      long long rank, P6(d), P6(sa), P6(sb))
{
    long long dims[MAXR] = A6(d), as[MAXR] = A6(sa), bs[MAXR] = A6(sb);
    binary_t(op, a, b, c, n, rank, dims, as, bs);
}

extern "C" __global__ void binary_i32(long long op, const int *a, const int *b, char *c, long long n, long long rank,
                                      P6(d), P6(sa), P6(sb))
{
    long long dims[MAXR] = A6(d), as[MAXR] = A6(sa), bs[MAXR] = A6(sb);
    binary_t(op, a, b, c, n, rank, dims, as, bs);
}

// equal_u8: Equal of bools.
extern "C" __global__ void equal_u8(const u8 *a, const u8 *b, u8 *c, long long n, long long rank, P6(d), P6(sa),
                                    P6(sb))
{
    long long dims[MAXR] = A6(d), as[MAXR] = A6(sa), bs[MAXR] = A6(sb);
    GRID_LOOP(i, n) { c[i] = (a[offset(i, rank, dims, as)] != 0) == (b[offset(i, rank, dims, bs)] != 0); }
}
