// The quantized operators' kernels (ops_quant.go, ops_quant_conv.go, ops_quant_matmul.go;
// launched by ops_quant_gpu.go). Element types are ONNX's numbers (nd.DType): 1 float32,
// 2 uint8, 3 int8, 6 int32. A scale that is not positive and finite sets *bad (the run
// then leaves the batch to the CPU, for its error); the CPU checks constant ones at load.

#include "kernels.cuh"

// qload is element i of a quantized array of type t (2 uint8, 3 int8, 6 int32).
__device__ __forceinline__ int qload(const void *p, long long t, long long i)
{
    switch (t) {
    case 2: return ((const u8 *)p)[i];
    case 3: return ((const signed char *)p)[i];
    default: return ((const int *)p)[i];
    }
}

// qstore writes saturate(rint(f) + zp) as element i of p, of type t (2 uint8, 3 int8): f is
// clamped to the range less zp first (integers: the same as clamping after rounding), and
// rounded half to even; NaN gives zp.
__device__ __forceinline__ void qstore(void *p, long long t, long long i, float f, int zp)
{
    float lo = (float)((t == 2 ? 0 : -128) - zp), hi = (float)((t == 2 ? 255 : 127) - zp);
    if (f != f) f = 0;
    f = f < lo ? lo : (f > hi ? hi : f);
    int q = (int)rintf(f) + zp;
    if (t == 2)
        ((u8 *)p)[i] = (u8)q;
    else
        ((signed char *)p)[i] = (signed char)q;
}

// scale_ok reports whether a scale is positive and finite.
__device__ __forceinline__ bool scale_ok(float s) { return s > 0 && s <= 3.402823466e38f; }

// quantize_linear: y[i] (type yt) = saturate(rint(x[i] / scale[c]) + zp[c]) over total
// elements, c = (i / inner) % n the index of the axis (n 1: per tensor); x float32 (xt 1) or
// int32 (xt 6); zp (type zt) may be null (0).
extern "C" __global__ void quantize_linear(const void *x, long long xt, const float *scale, const void *zp, long long zt,
                                           void *y, long long yt, long long total, long long n, long long inner,
                                           unsigned int *bad)
{
    GRID_LOOP(i, total)
    {
        long long c = (i / inner) % n;
        float s = scale[c];
        if (!scale_ok(s)) *bad = 1;
        float v = xt == 1 ? ((const float *)x)[i] : (float)((const int *)x)[i];
        qstore(y, yt, i, v / s, zp ? qload(zp, zt, c) : 0);
    }
}

// dequantize_linear: y[i] = float(x[i] - zp[c]) * scale[c], x of type xt (2, 3 or 6), zp
// of type zt or null, c as quantize_linear's.
extern "C" __global__ void dequantize_linear(const void *x, long long xt, const float *scale, const void *zp,
                                             long long zt, float *y, long long total, long long n, long long inner,
                                             unsigned int *bad)
{
    GRID_LOOP(i, total)
    {
        long long c = (i / inner) % n;
        float s = scale[c];
        if (!scale_ok(s)) *bad = 1;
        y[i] = (float)(qload(x, xt, i) - (zp ? qload(zp, zt, c) : 0)) * s;
    }
}

// qrequant writes the sum acc of output channel (or column) ch: as int32 to acc_out when it
// is not null (ConvInteger, MatMulInteger), else requantized into y (type yt) with
// multiplier xs[0] * ws[ch or 0] / ys[0] and zero point yzp[0], as ops_quant_gemm.go's
// requantRow (bias already added).
__device__ __forceinline__ void qrequant(int acc, long long i, long long ch, int *acc_out, const float *xs,
                                         const float *ws, long long wsn, const float *ys, const void *yzp, long long yt,
                                         void *y, unsigned int *bad)
{
    if (acc_out) {
        acc_out[i] = acc;
        return;
    }
    float w = ws[wsn > 1 ? ch : 0];
    if (!scale_ok(xs[0]) || !scale_ok(w) || !scale_ok(ys[0])) *bad = 1;
    float mult = xs[0] * w / ys[0];
    qstore(y, yt, i, (float)acc * mult, qload(yzp, yt, 0));
}

// qconv: the convolution of quantized x (n images of c planes of i0 x i1 x i2, type xt) by w
// (m x c/group x k0 x k1 x k2, type wt), each less its zero point (xzp one of type xt, null:
// 0; wzp one or one per output channel, wzn of them, type wt, null: 0), summed in int32 (the
// padding adds nothing), plus bias[ch] (int32, may be null); then qrequant (acc_out for
// ConvInteger; xs, ws, ys, yzp and y for QLinearConv). One thread per output value.
extern "C" __global__ void qconv(const void *x, long long xt, const void *w, long long wt, const void *xzp,
                                 const void *wzp, long long wzn, const int *bias, int *acc_out, const float *xs,
                                 const float *ws, long long wsn, const float *ys, const void *yzp, long long yt,
                                 void *y, unsigned int *bad, long long n, long long c, long long m, long long group,
                                 P3(i), P3(k), P3(o), P3(st), P3(pl), P3(dl))
{
    long long in[3] = A3(i), kk[3] = A3(k), out[3] = A3(o), str[3] = A3(st), pad[3] = A3(pl), dil[3] = A3(dl);
    long long osize = out[0] * out[1] * out[2], ksize = kk[0] * kk[1] * kk[2], isize = in[0] * in[1] * in[2];
    long long cg = c / group, mg = m / group;
    int xz = xzp ? qload(xzp, xt, 0) : 0;
    GRID_LOOP(t, n * m * osize)
    {
        long long op = t % osize, ch = (t / osize) % m, img = t / (osize * m);
        long long g = ch / mg;
        int wz = wzp ? qload(wzp, wt, wzn > 1 ? ch : 0) : 0;
        long long o0 = op / (out[1] * out[2]), o1 = (op / out[2]) % out[1], o2 = op % out[2];
        int acc = 0;
        for (long long ci = 0; ci < cg; ci++) {
            long long xb = (img * c + g * cg + ci) * isize, wb = (ch * cg + ci) * ksize;
            for (long long a = 0; a < kk[0]; a++) {
                long long j0 = o0 * str[0] - pad[0] + a * dil[0];
                if (j0 < 0 || j0 >= in[0]) continue;
                for (long long b = 0; b < kk[1]; b++) {
                    long long j1 = o1 * str[1] - pad[1] + b * dil[1];
                    if (j1 < 0 || j1 >= in[1]) continue;
                    for (long long e = 0; e < kk[2]; e++) {
                        long long j2 = o2 * str[2] - pad[2] + e * dil[2];
                        if (j2 < 0 || j2 >= in[2]) continue;
                        int xv = qload(x, xt, xb + (j0 * in[1] + j1) * in[2] + j2) - xz;
                        int wv = qload(w, wt, wb + (a * kk[1] + b) * kk[2] + e) - wz;
                        acc += xv * wv;
                    }
                }
            }
        }
        if (bias) acc += bias[ch];
        qrequant(acc, t, ch, acc_out, xs, ws, wsn, ys, yzp, yt, y, bad);
    }
}

// qmatmul: the products A (m x k, type at) x B (k x n, type bt) of a batch, product p's A at
// element ao[p] and B at bo[p], each less its zero point (azp one or one per row, azn of
// them; bzp one or one per column, bzn; null: 0), summed in int32; then qrequant with
// output column j as the channel (acc_out for MatMulInteger; as, bs, ys, yzp and y for
// QLinearMatMul). One thread per output value.
extern "C" __global__ void qmatmul(const void *a, long long at, const void *b, long long bt, const void *azp,
                                   long long azn, const void *bzp, long long bzn, const long long *ao,
                                   const long long *bo, int *acc_out, const float *as, const float *bs, long long bsn,
                                   const float *ys, const void *yzp, long long yt, void *y, unsigned int *bad,
                                   long long batch, long long m, long long k, long long n)
{
    GRID_LOOP(t, batch * m * n)
    {
        long long j = t % n, r = (t / n) % m, p = t / (m * n);
        int az = azp ? qload(azp, at, azn > 1 ? r : 0) : 0, bz = bzp ? qload(bzp, bt, bzn > 1 ? j : 0) : 0;
        int acc = 0;
        for (long long q = 0; q < k; q++)
            acc += (qload(a, at, ao[p] + r * k + q) - az) * (qload(b, bt, bo[p] + q * n + j) - bz);
        qrequant(acc, t, j, acc_out, as, bs, bsn, ys, yzp, yt, y, bad);
    }
}
