// CUDA kernels of the onnx step: the GPU twins of the operators' CPU code (ops_*.go), run
// by the device plan (gpu.go) one node at a time. Matrix products (Gemm, MatMul, the
// convolutions as GEMM) are cuBLAS calls made by the executor; these kernels do the rest.
// kernels.ptx beside this file is generated from it by `make ptx` (cmd/beamgpu-ptx) and
// embedded by kernels.go; `make ptx-check` fails when the two differ.
//
// The same source is compiled for the host by the tests (internal/kernelemu, under an
// emulation header), so every kernel here runs through ONNX's conformance tests without a
// GPU. That is why no kernel uses shared memory, __syncthreads or warp shuffles: each
// thread computes its outputs alone (grid-stride loops; one thread per reduced row).
//
// Parameters: every parameter is 8 bytes wide (a pointer, a long long or a double), as
// the executor's launches pass them. Shapes of up to MAXR dimensions are passed as MAXR
// separate long longs (dims, then element strides per operand), so no launch uploads
// metadata; the device plan merges dimensions first (and runs a node of more on the host).
//
// Numerics: built without fast math or FMA contraction (cmd/beamgpu-ptx); transcendental
// functions and reductions are computed in double and rounded, as the CPU code does, so
// results agree with it to float32 rounding (the tests hold them to 1e-4 relative in norm).

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

// ---- data movement -------------------------------------------------------------------

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

// gather: out[o, j, k] = data[o, idx[j], k] over outer x nidx x inner (inner in elements
// of esize bytes); idx holds int64 (idx64 != 0) or int32 indices, negative ones counted
// from the end. An index out of range writes zeros and sets *bad (the plan then runs the
// batch on the CPU, for its error).
extern "C" __global__ void gather(char *out, const char *data, const void *idx, long long esize, long long outer,
                                  long long axis_len, long long inner, long long nidx, long long idx64,
                                  unsigned int *bad)
{
    long long n = outer * nidx * inner;
    GRID_LOOP(i, n)
    {
        long long k = i % inner;
        long long j = (i / inner) % nidx;
        long long o = i / (inner * nidx);
        long long v = idx64 ? ((const long long *)idx)[j] : (long long)((const int *)idx)[j];
        if (v < 0) v += axis_len;
        bool ok = v >= 0 && v < axis_len;
        if (!ok) {
            *bad = 1;
            v = 0;
        }
        long long s = (o * axis_len + v) * inner + k;
        switch (esize) {
        case 1: ((u8 *)out)[i] = ok ? ((const u8 *)data)[s] : 0; break;
        case 2: ((unsigned short *)out)[i] = ok ? ((const unsigned short *)data)[s] : 0; break;
        case 4: ((unsigned int *)out)[i] = ok ? ((const unsigned int *)data)[s] : 0; break;
        case 8: ((unsigned long long *)out)[i] = ok ? ((const unsigned long long *)data)[s] : 0; break;
        }
    }
}

// ---- elementwise ---------------------------------------------------------------------

// Unary operations (ops_math.go's unOp, in its order).
enum {
    UN_SQRT,
    UN_EXP,
    UN_LOG,
    UN_NEG,
    UN_ABS,
    UN_RECIPROCAL,
    UN_TANH,
    UN_SIGMOID,
    UN_ERF,
    UN_RELU,
    UN_LEAKY_RELU,
    UN_HARD_SIGMOID,
    UN_HARD_SWISH,
    UN_ELU,
};

__device__ __forceinline__ float clamp01(float v) { return v < 0 ? 0 : (v > 1 ? 1 : v); }

// unary_f32: y = op(x) over n float32s; alpha and beta are the activations' attributes.
extern "C" __global__ void unary_f32(long long op, const float *x, float *y, long long n, double alpha, double beta)
{
    float a = (float)alpha, b = (float)beta;
    GRID_LOOP(i, n)
    {
        float v = x[i];
        double d = (double)v;
        float r;
        switch (op) {
        case UN_SQRT: r = sqrtf(v); break;
        case UN_EXP: r = (float)exp(d); break;
        case UN_LOG: r = (float)log(d); break;
        case UN_NEG: r = -v; break;
        case UN_ABS: r = fabsf(v); break;
        case UN_RECIPROCAL: r = 1.0f / v; break;
        case UN_TANH: r = (float)tanh(d); break;
        case UN_SIGMOID: r = (float)(1.0 / (1.0 + exp(-d))); break;
        case UN_ERF: r = (float)erf(d); break;
        case UN_RELU: r = v != v ? v : (v > 0 ? v : 0.0f); break;
        case UN_LEAKY_RELU: r = v != v ? v : (v > 0 ? v : (v < 0 ? a * v : 0.0f)); break;
        case UN_HARD_SIGMOID: r = v != v ? v : clamp01(a * v + b); break;
        case UN_HARD_SWISH: r = v != v ? v : v * clamp01(v * a + b); break;
        case UN_ELU: r = v < 0 ? (float)((double)a * expm1(d)) : v; break;
        default: r = v;
        }
        y[i] = r;
    }
}

// clip_f32: y = min(hi, max(x, lo)); the bounds are lo and hi, or the one float at lop
// and hip where those are not null. A NaN bound makes every output NaN; a NaN input stays
// NaN.
extern "C" __global__ void clip_f32(const float *x, float *y, long long n, double lo, double hi, const float *lop,
                                    const float *hip)
{
    float l = lop ? *lop : (float)lo, h = hip ? *hip : (float)hi;
    float nan = l != l ? l : h;
    bool nanBound = l != l || h != h;
    GRID_LOOP(i, n)
    {
        float v = x[i];
        if (nanBound) {
            v = nan;
        } else {
            if (v < l) v = l;
            if (v > h) v = h;
        }
        y[i] = v;
    }
}

// Binary operations (ops_elementwise.go's ewOp, in its order).
enum { EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_MAX, EW_MIN, EW_POW, EW_EQUAL, EW_LESS, EW_GREATER };

template <typename T> __device__ __forceinline__ T arith(long long op, T x, T y)
{
    switch (op) {
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

// binary_i64 and binary_i32: Add, Sub, Mul, Max, Min and the comparisons of integers
// (wrapping as C; Div and Pow of integers run on the host).
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

// Element types, as ONNX's TensorProto.DataType numbers them.
enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_INT16 = 5, T_INT32 = 6, T_INT64 = 7, T_BOOL = 9, T_DOUBLE = 11 };

// cast: y = x converted from type from to type to (the T_ codes above). Floats to
// integers truncate toward zero (NaN gives 0; values out of range wrap through int64);
// integers convert exactly to wider types; to bool is x != 0.
extern "C" __global__ void cast(const void *x, void *y, long long n, long long from, long long to)
{
    GRID_LOOP(i, n)
    {
        double f = 0;
        long long v = 0;
        bool isf = false;
        switch (from) {
        case T_FLOAT: f = ((const float *)x)[i]; isf = true; break;
        case T_DOUBLE: f = ((const double *)x)[i]; isf = true; break;
        case T_UINT8: v = ((const u8 *)x)[i]; break;
        case T_BOOL: v = ((const u8 *)x)[i] != 0; break;
        case T_INT8: v = ((const signed char *)x)[i]; break;
        case T_INT16: v = ((const short *)x)[i]; break;
        case T_INT32: v = ((const int *)x)[i]; break;
        case T_INT64: v = ((const long long *)x)[i]; break;
        }
        if (isf && to != T_FLOAT && to != T_DOUBLE && to != T_BOOL) {
            v = f != f ? 0 : (f >= 9223372036854775807.0 ? (long long)0x7fffffffffffffffLL
                                                         : (f <= -9223372036854775808.0 ? (long long)0x8000000000000000ULL : (long long)f));
        }
        switch (to) {
        case T_FLOAT: ((float *)y)[i] = isf ? (float)f : (float)v; break;
        case T_DOUBLE: ((double *)y)[i] = isf ? f : (double)v; break;
        case T_BOOL: ((u8 *)y)[i] = isf ? (f != 0) : (v != 0); break;
        case T_UINT8: ((u8 *)y)[i] = (u8)v; break;
        case T_INT8: ((signed char *)y)[i] = (signed char)v; break;
        case T_INT16: ((short *)y)[i] = (short)v; break;
        case T_INT32: ((int *)y)[i] = (int)v; break;
        case T_INT64: ((long long *)y)[i] = v; break;
        }
    }
}

// ---- reductions and normalisations ---------------------------------------------------

// Reductions (ops_reduce.go's redOp, in its order).
enum { RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD, RED_SUM_SQUARE, RED_L1, RED_L2, RED_LOG_SUM, RED_LOG_SUM_EXP };

// reduce_f32: x viewed as outer x len x inner; y[o, k] reduces x[o, :, k], one thread
// each, in double.
extern "C" __global__ void reduce_f32(long long op, const float *x, float *y, long long outer, long long len,
                                      long long inner)
{
    GRID_LOOP(t, outer * inner)
    {
        long long o = t / inner, k = t - o * inner;
        const float *p = x + o * len * inner + k;
        double acc;
        switch (op) {
        case RED_MAX: {
            float m = -INFINITY;
            for (long long j = 0; j < len; j++) {
                float v = p[j * inner];
                if (v > m || v != v) m = v;
                if (m != m) break;
            }
            y[t] = m;
            continue;
        }
        case RED_MIN: {
            float m = INFINITY;
            for (long long j = 0; j < len; j++) {
                float v = p[j * inner];
                if (v < m || v != v) m = v;
                if (m != m) break;
            }
            y[t] = m;
            continue;
        }
        case RED_PROD:
            acc = 1;
            for (long long j = 0; j < len; j++) acc *= p[j * inner];
            break;
        case RED_LOG_SUM_EXP: {
            double m = -INFINITY;
            for (long long j = 0; j < len; j++) m = fmax(m, (double)p[j * inner]);
            acc = 0;
            for (long long j = 0; j < len; j++) acc += exp((double)p[j * inner] - m);
            acc = len == 0 ? -INFINITY : (isinf(m) ? m : m + log(acc));
            y[t] = (float)acc;
            continue;
        }
        default:
            acc = 0;
            for (long long j = 0; j < len; j++) {
                double v = p[j * inner];
                acc += (op == RED_SUM_SQUARE || op == RED_L2) ? v * v : (op == RED_L1 ? fabs(v) : v);
            }
        }
        if (op == RED_MEAN) acc /= (double)len;
        if (op == RED_L2) acc = sqrt(acc);
        if (op == RED_LOG_SUM) acc = log(acc);
        y[t] = (float)acc;
    }
}

// softmax_f32: y[o, :, k] = softmax (or log-softmax, when lg) of x[o, :, k] over len, x
// viewed as outer x len x inner; one thread per (o, k), sums in double.
extern "C" __global__ void softmax_f32(const float *x, float *y, long long outer, long long len, long long inner,
                                       long long lg)
{
    GRID_LOOP(t, outer * inner)
    {
        long long o = t / inner, k = t - o * inner;
        const float *p = x + o * len * inner + k;
        float *q = y + o * len * inner + k;
        float m = -INFINITY;
        for (long long j = 0; j < len; j++) m = fmaxf(m, p[j * inner]);
        double sum = 0;
        for (long long j = 0; j < len; j++) sum += exp((double)p[j * inner] - (double)m);
        if (lg) {
            double ls = log(sum);
            for (long long j = 0; j < len; j++) q[j * inner] = (float)((double)p[j * inner] - (double)m - ls);
        } else {
            for (long long j = 0; j < len; j++) q[j * inner] = (float)(exp((double)p[j * inner] - (double)m) / sum);
        }
    }
}

// layernorm_f32: each of rows rows of cols values normalised to mean 0 and variance 1
// (in double), then times scale and plus bias (cols values each; bias may be null);
// mean and inv (rows values each, may be null) get the row's mean and 1/sqrt(var+eps).
extern "C" __global__ void layernorm_f32(const float *x, const float *scale, const float *bias, float *y, float *mean,
                                         float *inv, long long rows, long long cols, double eps)
{
    GRID_LOOP(r, rows)
    {
        const float *p = x + r * cols;
        float *q = y + r * cols;
        double s = 0;
        for (long long j = 0; j < cols; j++) s += p[j];
        double mu = s / (double)cols, v = 0;
        for (long long j = 0; j < cols; j++) {
            double d = p[j] - mu;
            v += d * d;
        }
        double is = 1.0 / sqrt(v / (double)cols + eps);
        for (long long j = 0; j < cols; j++) {
            double o = ((double)p[j] - mu) * is * (double)scale[j];
            if (bias) o += bias[j];
            q[j] = (float)o;
        }
        if (mean) mean[r] = (float)mu;
        if (inv) inv[r] = (float)is;
    }
}

// batchnorm_f32: inference-mode BatchNormalization of x (n x c x hw): y = (x - mean[c]) /
// sqrt(var[c] + eps) * scale[c] + b[c].
extern "C" __global__ void batchnorm_f32(const float *x, const float *scale, const float *b, const float *mean,
                                         const float *var, float *y, long long n, long long c, long long hw, double eps)
{
    GRID_LOOP(i, n * c * hw)
    {
        long long ch = (i / hw) % c;
        double is = 1.0 / sqrt((double)var[ch] + eps);
        y[i] = (float)(((double)x[i] - (double)mean[ch]) * is * (double)scale[ch] + (double)b[ch]);
    }
}

// ---- convolution and pooling (3 spatial axes; 1-D and 2-D lead with axes of size 1) ---

#define P3(n) long long n##0, long long n##1, long long n##2
#define A3(n) {n##0, n##1, n##2}

// im2col_f32: for images images of c planes of i0 x i1 x i2 (at x + img*xs), the columns
// of a k0 x k1 x k2 window (strides st, pads pl before, dilations dl) over the o0 x o1 x o2
// outputs: cols + img*cs holds (c*k0*k1*k2) x (o0*o1*o2) values, zeros in the padding.
extern "C" __global__ void im2col_f32(const float *x, float *cols, long long images, long long xs, long long cs,
                                      long long c, P3(i), P3(k), P3(o), P3(st), P3(pl), P3(dl))
{
    long long in[3] = A3(i), kk[3] = A3(k), out[3] = A3(o), str[3] = A3(st), pad[3] = A3(pl), dil[3] = A3(dl);
    long long osize = out[0] * out[1] * out[2], ksize = kk[0] * kk[1] * kk[2];
    long long per = c * ksize * osize;
    GRID_LOOP(t, images * per)
    {
        long long img = t / per, i = t - img * per;
        long long op = i % osize, row = i / osize;
        long long ch = row / ksize, kp = row - ch * ksize;
        long long oidx[3] = {op / (out[1] * out[2]), (op / out[2]) % out[1], op % out[2]};
        long long kidx[3] = {kp / (kk[1] * kk[2]), (kp / kk[2]) % kk[1], kp % kk[2]};
        long long off = ch;
        bool inside = true;
        for (int d = 0; d < 3; d++) {
            long long j = oidx[d] * str[d] - pad[d] + kidx[d] * dil[d];
            inside = inside && j >= 0 && j < in[d];
            off = off * in[d] + j;
        }
        cols[img * cs + i] = inside ? x[img * xs + off] : 0.0f;
    }
}

// bias_channels_f32: y[n, c, :] += bias[c] over n x c x hw.
extern "C" __global__ void bias_channels_f32(float *y, const float *bias, long long n, long long c, long long hw)
{
    GRID_LOOP(i, n * c * hw) { y[i] += bias[(i / hw) % c]; }
}

// conv_depthwise_f32: a convolution of groups = c channels, mult outputs per channel: y
// (n x c*mult x o) from x (n x c x i) and w (c*mult x 1 x k), plus bias (may be null);
// each output a sum over the window in double.
extern "C" __global__ void conv_depthwise_f32(const float *x, const float *wt, const float *bias, float *y, long long n,
                                              long long c, long long mult, P3(i), P3(k), P3(o), P3(st), P3(pl),
                                              P3(dl))
{
    long long in[3] = A3(i), kk[3] = A3(k), out[3] = A3(o), str[3] = A3(st), pad[3] = A3(pl), dil[3] = A3(dl);
    long long m = c * mult, osize = out[0] * out[1] * out[2], isize = in[0] * in[1] * in[2];
    GRID_LOOP(t, n * m * osize)
    {
        long long op = t % osize, oc = (t / osize) % m, img = t / (osize * m);
        long long oidx[3] = {op / (out[1] * out[2]), (op / out[2]) % out[1], op % out[2]};
        const float *xp = x + (img * c + oc / mult) * isize;
        const float *wp = wt + oc * kk[0] * kk[1] * kk[2];
        double acc = 0;
        for (long long a = 0; a < kk[0]; a++) {
            long long j0 = oidx[0] * str[0] - pad[0] + a * dil[0];
            if (j0 < 0 || j0 >= in[0]) continue;
            for (long long b = 0; b < kk[1]; b++) {
                long long j1 = oidx[1] * str[1] - pad[1] + b * dil[1];
                if (j1 < 0 || j1 >= in[1]) continue;
                for (long long e = 0; e < kk[2]; e++) {
                    long long j2 = oidx[2] * str[2] - pad[2] + e * dil[2];
                    if (j2 < 0 || j2 >= in[2]) continue;
                    acc += (double)xp[(j0 * in[1] + j1) * in[2] + j2] * (double)wp[(a * kk[1] + b) * kk[2] + e];
                }
            }
        }
        if (bias) acc += bias[oc];
        y[t] = (float)acc;
    }
}

// pool_f32: MaxPool (mode 0) or AveragePool (mode 1: the mean of the window's elements
// inside the input; mode 2, count_include_pad: divided by the number of the window's
// elements inside the padded input, which ends pe after it) of planes planes.
extern "C" __global__ void pool_f32(long long mode, const float *x, float *y, long long planes, P3(i), P3(k), P3(o),
                                    P3(st), P3(pl), P3(dl), P3(pe))
{
    long long in[3] = A3(i), kk[3] = A3(k), out[3] = A3(o), str[3] = A3(st), pad[3] = A3(pl), dil[3] = A3(dl),
              pend[3] = A3(pe);
    long long osize = out[0] * out[1] * out[2], isize = in[0] * in[1] * in[2];
    GRID_LOOP(t, planes * osize)
    {
        long long op = t % osize, pln = t / osize;
        long long oidx[3] = {op / (out[1] * out[2]), (op / out[2]) % out[1], op % out[2]};
        const float *p = x + pln * isize;
        float m = -INFINITY;
        double sum = 0;
        long long count = 0, padded = 1;
        for (int d = 0; d < 3; d++) {
            long long n = 0;
            for (long long a = 0; a < kk[d]; a++) {
                long long j = oidx[d] * str[d] - pad[d] + a * dil[d];
                n += j >= -pad[d] && j < in[d] + pend[d];
            }
            padded *= n;
        }
        for (long long a = 0; a < kk[0]; a++) {
            long long j0 = oidx[0] * str[0] - pad[0] + a * dil[0];
            if (j0 < 0 || j0 >= in[0]) continue;
            for (long long b = 0; b < kk[1]; b++) {
                long long j1 = oidx[1] * str[1] - pad[1] + b * dil[1];
                if (j1 < 0 || j1 >= in[1]) continue;
                for (long long e = 0; e < kk[2]; e++) {
                    long long j2 = oidx[2] * str[2] - pad[2] + e * dil[2];
                    if (j2 < 0 || j2 >= in[2]) continue;
                    float v = p[(j0 * in[1] + j1) * in[2] + j2];
                    if (v > m || v != v) m = v;
                    sum += v;
                    count++;
                }
            }
        }
        if (mode == 0) {
            y[t] = m;
        } else {
            y[t] = (float)(sum / (double)(mode == 2 ? padded : count));
        }
    }
}

// gemm_epilogue_f32: y (m x n, holding A B) = alpha*y + beta*c, c read at strides scm, scn
// (0 where it broadcasts); c may be null (no C, or beta 0).
extern "C" __global__ void gemm_epilogue_f32(float *y, const float *c, long long m, long long n, double alpha,
                                             double beta, long long scm, long long scn)
{
    float a = (float)alpha, b = (float)beta;
    GRID_LOOP(i, m * n)
    {
        float v = a * y[i];
        if (c) {
            long long r = i / n, k = i - r * n;
            v += b * c[r * scm + k * scn];
        }
        y[i] = v;
    }
}
