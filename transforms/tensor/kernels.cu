// CUDA kernels of the tensor steps, the GPU twins of Scaler.Apply (standardize.go),
// Dense.Forward, Softmax and Argmax (dense.go) and Neighbors (knn.go). The matrix
// products themselves (x W, q r^T) are cuBLAS Sgemm calls made by the executor
// (runtime/executor/cuda); these kernels do what comes around them. kernels.ptx
// beside this file is generated from it by `make ptx` (cmd/beamgpu-ptx) and embedded
// by kernels.go; `make ptx-check` fails when the two differ.
//
// Target: PTX for the virtual architecture compute_70 (cmd/beamgpu-ptx, -arch).
// The driver JIT-compiles PTX for the GPU it finds at module load (and caches the
// result), so one file runs on every GPU of compute capability 7.0 or more (V100, T4,
// A100, L4, H100, ...) with no per-GPU cubin to build or ship; nothing here needs
// more than 7.0. CUDA 11.8's nvcc emits PTX ISA 7.8: the driver must be R520 or newer.
//
// Numerics (the CPU results must be met within float32 relative 1e-5):
//   - no fast math: built with -fmad=false -prec-div=true -prec-sqrt=true -ftz=false,
//     and the float formulas use round-to-nearest intrinsics (__fadd_rn, ...) that are
//     never contracted into FMAs, so elementwise results are bit-identical to Go's;
//   - reductions are done in double where the CPU uses float64 (softmax sums, squared
//     norms), so only the summation order differs (relative 1e-16 before rounding);
//     maxima and argmax are order-independent and exact.
//
// Parameters: gorgonia.org/cu's Function.Launch copies 8 bytes per kernel parameter,
// so every parameter is 8 bytes wide: pointers, long long, double.
//
// Launch geometries, chosen by the host (runtime/executor/cuda):
//   - elementwise (standardize_*, bias_relu, any_nonfinite): 1-D grid-stride loop, blockDim.x = 256,
//     gridDim.x = min(ceil(n/256), 32*SMs); coalesced.
//   - row-wise (softmax_rows, argmax_rows, row_sqnorms): one warp per row,
//     blockDim.x = 256 (8 rows per block), gridDim.x = ceil(rows/8); the 32 lanes
//     stride over the row's columns (coalesced) and combine with warp shuffles.
//   - knn_finish: one block per query, blockDim.x = KNN_THREADS (256),
//     gridDim.x = the number of queries.

#include <limits.h>

#define FULL_MASK 0xffffffffu
#define ROWS_PER_BLOCK 8 // warps of a 256-thread block, one row each

// standardize_unit: y = x / 255 (Scaler mode "unit").
extern "C" __global__ void standardize_unit(const float *__restrict__ x, float *__restrict__ y, long long n)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = __fdiv_rn(x[i], 255.0f);
    }
}

// standardize_zscore: y[r, c] = (x[r, c] - mean[c]) / std[c] (Scaler mode "zscore");
// x and y are rows x cols, row-major; mean and std hold cols values.
extern "C" __global__ void standardize_zscore(const float *__restrict__ x, float *__restrict__ y,
                                              long long rows, long long cols,
                                              const float *__restrict__ mean, const float *__restrict__ std)
{
    long long n = rows * cols;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        long long c = i % cols;
        y[i] = __fdiv_rn(__fsub_rn(x[i], __ldg(&mean[c])), __ldg(&std[c]));
    }
}

// bias_relu: after the Sgemm y = x W (rows x cols, row-major), y[r, c] += bias[c],
// then y = max(y, 0) if relu != 0 (NaN stays NaN, as relu() of dense.go).
extern "C" __global__ void bias_relu(float *__restrict__ y, const float *__restrict__ bias,
                                     long long rows, long long cols, long long relu)
{
    long long n = rows * cols;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = __fadd_rn(y[i], __ldg(&bias[i % cols]));
        if (relu != 0 && v < 0.0f) {
            v = 0.0f;
        }
        y[i] = v;
    }
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    }
    return v;
}

__device__ __forceinline__ double warp_sum(double v)
{
    for (int o = 16; o > 0; o >>= 1) {
        v = __dadd_rn(v, __shfl_xor_sync(FULL_MASK, v, o));
    }
    return v;
}

// softmax_rows: the numerically stable softmax of each row, as softmaxRow of
// dense.go: m = the row maximum (float), e_c = exp(double(x_c - m)) (the difference in
// float), y_c = float(e_c / sum_c e_c), the sum in double. The input must be finite
// (the caller checks, as Softmax does). One warp per row (see the top of the file);
// each lane recomputes its exponentials in the last pass rather than storing them.
extern "C" __global__ void softmax_rows(const float *__restrict__ x, float *__restrict__ y,
                                        long long rows, long long cols)
{
    long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) {
        return; // the whole warp leaves: the shuffles below see full warps only
    }
    const float *src = x + row * cols;
    float *dst = y + row * cols;
    float m = -INFINITY;
    for (long long c = lane; c < cols; c += 32) {
        m = fmaxf(m, src[c]);
    }
    m = warp_max(m);
    double sum = 0.0;
    for (long long c = lane; c < cols; c += 32) {
        sum = __dadd_rn(sum, exp((double)__fsub_rn(src[c], m)));
    }
    sum = warp_sum(sum);
    for (long long c = lane; c < cols; c += 32) {
        dst[c] = __double2float_rn(__ddiv_rn(exp((double)__fsub_rn(src[c], m)), sum));
    }
}

// better reports whether (v, i) beats (bv, bi) for argmax: a number beats NaN, the
// larger number wins, and between equal values (or two NaNs) the lower index wins.
// Folding a row with it gives argmax() of dense.go: the lowest index of the largest
// non-NaN value, 0 for a row of NaNs.
__device__ __forceinline__ bool better(float v, long long i, float bv, long long bi)
{
    bool vn = v != v, bn = bv != bv;
    if (vn != bn) {
        return bn;
    }
    if (!vn && v != bv) {
        return v > bv;
    }
    return i < bi;
}

// argmax_rows: out[r] = the index of the largest value of row r (ties: the lowest
// index; NaN never wins; a row of NaNs gives 0). cols >= 1. One warp per row.
extern "C" __global__ void argmax_rows(const float *__restrict__ x, int *__restrict__ out,
                                       long long rows, long long cols)
{
    long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) {
        return;
    }
    const float *src = x + row * cols;
    float bv = __int_as_float(0x7fc00000); // NaN: any value beats it
    long long bi = LLONG_MAX;
    for (long long c = lane; c < cols; c += 32) {
        float v = src[c];
        if (better(v, c, bv, bi)) {
            bv = v;
            bi = c;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(FULL_MASK, bv, o);
        long long oi = __shfl_xor_sync(FULL_MASK, bi, o);
        if (better(ov, oi, bv, bi)) {
            bv = ov;
            bi = oi;
        }
    }
    if (lane == 0) {
        out[row] = (int)bi;
    }
}

// any_nonfinite: *flag |= 1 if any of the n values of x is NaN or infinite (its
// exponent bits all set, the test of isBad in batch.go). The launches check their input
// batch with it on the device, where the batch already is, instead of a pass over the
// host's copy; the host zeroes flag first and reads it once the stream is done.
// Elementwise geometry; one atomic per block that saw such a value.
extern "C" __global__ void any_nonfinite(const float *__restrict__ x, long long n, unsigned int *__restrict__ flag)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    int bad = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        bad |= (__float_as_uint(x[i]) & 0x7f800000u) == 0x7f800000u;
    }
    if (__syncthreads_or(bad) && threadIdx.x == 0) {
        atomicOr(flag, 1u);
    }
}

// row_sqnorms: out[r] = float(sum_c double(x[r, c])^2), the squared norms of the kNN
// queries and reference rows (sqNorms of knn.go, also summed in double; the squares
// of floats are exact in double). One warp per row.
extern "C" __global__ void row_sqnorms(const float *__restrict__ x, float *__restrict__ out,
                                       long long rows, long long cols)
{
    long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) {
        return;
    }
    const float *src = x + row * cols;
    double s = 0.0;
    for (long long c = lane; c < cols; c += 32) {
        double v = (double)src[c];
        s = __dadd_rn(s, __dmul_rn(v, v));
    }
    s = warp_sum(s);
    if (lane == 0) {
        out[row] = __double2float_rn(s);
    }
}

#define KNN_MAX_K 32
#define KNN_THREADS 256

// knn_before orders kNN candidates by (distance, reference index): the CPU's tie rule
// (equal distances: the lower reference index is the nearer neighbour).
__device__ __forceinline__ bool knn_before(float d, int i, float bd, int bi)
{
    return d < bd || (d == bd && i < bi);
}

// knn_finish: the k nearest reference rows of each query, from the Sgemm of the dot
// products and the squared norms:
//   dots   nq x nref, row-major: dots[q*nref + j] = q_q . r_j
//   qn, rn the squared norms of the nq queries and the nref reference rows
//   idx    nq x k: the reference indices, nearest first; dist: their squared distances
// with the distance of Neighbors (knn.go), in float: d = (qn + rn) - 2 dot, negative
// (rounding) clamped to 0, NaN (overflow) taken as +Inf. 1 <= k <= KNN_MAX_K and
// k <= nref <= INT_MAX (the host checks).
//
// One block of KNN_THREADS threads per query (gridDim.x = nq). Selection in two steps:
//   1. thread t scans references t, t+256, ... in increasing index order and keeps its
//      own k best in a sorted list (local memory): a candidate displaces only an entry
//      at a strictly greater distance, so ties keep the lower index, as in selectRow;
//   2. k rounds of a block-wide minimum of the threads' list heads under
//      (distance, index) order (warp shuffles, then one warp over the 8 warp winners
//      in shared memory); the thread holding the winner pops it. The global k best
//      are among the union of the per-thread k best, so round r yields the r-th
//      nearest neighbour, with exactly the CPU's order.
extern "C" __global__ void __launch_bounds__(KNN_THREADS)
knn_finish(const float *__restrict__ dots, const float *__restrict__ qn, const float *__restrict__ rn,
           long long nq, long long nref, long long k, int *__restrict__ idx, float *__restrict__ dist)
{
    __shared__ float win_d[KNN_THREADS / 32];
    __shared__ int win_i[KNN_THREADS / 32];
    long long q = blockIdx.x;
    if (q >= nq || k < 1 || k > KNN_MAX_K) {
        return; // uniform for the block; the host never asks for k > KNN_MAX_K
    }
    int kk = (int)k;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const float *row = dots + q * nref;
    float qq = qn[q];

    // 1. Per-thread top k.
    float ld[KNN_MAX_K];
    int li[KNN_MAX_K];
    int cnt = 0;
    for (long long j = threadIdx.x; j < nref; j += blockDim.x) {
        float d = __fsub_rn(__fadd_rn(qq, rn[j]), __fmul_rn(2.0f, row[j]));
        if (d < 0.0f) {
            d = 0.0f;
        } else if (d != d) {
            d = INFINITY;
        }
        if (cnt == kk && !(d < ld[kk - 1])) {
            continue;
        }
        int pos = cnt < kk ? cnt : kk - 1; // insert after every entry at a distance <= d
        while (pos > 0 && ld[pos - 1] > d) {
            ld[pos] = ld[pos - 1];
            li[pos] = li[pos - 1];
            pos--;
        }
        ld[pos] = d;
        li[pos] = (int)j;
        if (cnt < kk) {
            cnt++;
        }
    }

    // 2. k rounds of a block-wide minimum over the list heads.
    int head = 0;
    int nwarps = blockDim.x / 32;
    for (int r = 0; r < kk; r++) {
        float cd = INFINITY; // an exhausted list offers (+Inf, INT_MAX): any real
        int ci = INT_MAX;    // candidate, even at +Inf, comes before it
        if (head < cnt) {
            cd = ld[head];
            ci = li[head];
        }
        for (int o = 16; o > 0; o >>= 1) {
            float od = __shfl_xor_sync(FULL_MASK, cd, o);
            int oi = __shfl_xor_sync(FULL_MASK, ci, o);
            if (knn_before(od, oi, cd, ci)) {
                cd = od;
                ci = oi;
            }
        }
        if (lane == 0) {
            win_d[warp] = cd;
            win_i[warp] = ci;
        }
        __syncthreads();
        if (warp == 0) {
            cd = lane < nwarps ? win_d[lane] : INFINITY;
            ci = lane < nwarps ? win_i[lane] : INT_MAX;
            for (int o = 16; o > 0; o >>= 1) {
                float od = __shfl_xor_sync(FULL_MASK, cd, o);
                int oi = __shfl_xor_sync(FULL_MASK, ci, o);
                if (knn_before(od, oi, cd, ci)) {
                    cd = od;
                    ci = oi;
                }
            }
            if (lane == 0) {
                win_d[0] = cd;
                win_i[0] = ci;
                idx[q * k + r] = ci;
                dist[q * k + r] = cd;
            }
        }
        __syncthreads();
        if (head < cnt && li[head] == win_i[0]) {
            head++; // reference indices are unique: only the winner's owner pops
        }
        __syncthreads(); // everyone has read win_i[0] before the next round writes it
    }
}
