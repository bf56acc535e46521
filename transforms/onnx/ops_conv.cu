// Conv's kernels (ops_conv.go, launched by ops_conv_gpu.go): im2col for the products
// that cuBLAS computes, the bias, and depthwise convolutions.

#include "kernels.cuh"

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

// conv_epilogue_f32: a fused Conv's or MatMul's epilogue over y (n x c x hw, the products): y
// += bias[c] (bias may be null), y += z (the residual, y's shape; may be null), then the
// activation: op >= 0 a unary operation (unary_op, a and b its attributes), op == -2 Clip to
// [a, b] as clip_f32 computes it, op == -1 none, op -3 to -6 GELU as exported with Erf (d = v
// / a for -3 and -5, v * a for -4 and -6; f = erf(d) + 1; (v * f) * b for -3 and -4, (v * b) * f
// for -5 and -6), op -7 SiLU (v * sigmoid(v)). Each step rounds as the unfused kernels do.
extern "C" __global__ void conv_epilogue_f32(float *y, const float *bias, const float *z, long long n, long long c,
                                             long long hw, long long op, double a, double b)
{
    float fa = (float)a, fb = (float)b;
    bool nanBound = op == -2 && (fa != fa || fb != fb);
    float nan = fa != fa ? fa : fb;
    GRID_LOOP(i, n * c * hw)
    {
        float v = y[i];
        if (bias) v += bias[(i / hw) % c];
        if (z) v += z[i];
        if (op >= 0) {
            v = unary_op(op, v, fa, fb);
        } else if (op == -2) {
            if (nanBound) {
                v = nan;
            } else {
                if (v < fa) v = fa;
                if (v > fb) v = fb;
            }
        } else if (op == -7) {
            v = v * unary_op(UN_SIGMOID, v, 0, 0);
        } else if (op <= -3 && op >= -6) {
            float d = (op == -3 || op == -5) ? v / fa : v * fa;
            float f = unary_op(UN_ERF, d, 0, 0) + 1.0f;
            v = op >= -4 ? (v * f) * fb : (v * fb) * f;
        }
        y[i] = v;
    }
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

// col2im_f32: ConvTranspose's output (ops_conv_transpose.go) from its columns: for images
// images of mg output channels at y + img*ys, each of o0 x o1 x o2 positions (the output's
// spatial shape; i0 x i1 x i2 is X's), y[co, o] = bias[co] + the sum, over the taps of a
// k0 x k1 x k2 window (strides st, pads pl before, dilations dl), of the column value
// cols[img*cs + (co*taps + tap)*isize + i] of the input position i whose window reads o
// under that tap (im2col's adjoint, gathered: one thread per output, in double).
extern "C" __global__ void col2im_f32(const float *cols, float *y, const float *bias, long long images, long long ys,
                                      long long cs, long long mg, P3(i), P3(k), P3(o), P3(st), P3(pl), P3(dl))
{
    long long in[3] = A3(i), kk[3] = A3(k), out[3] = A3(o), str[3] = A3(st), pad[3] = A3(pl), dil[3] = A3(dl);
    long long osize = out[0] * out[1] * out[2], isize = in[0] * in[1] * in[2], taps = kk[0] * kk[1] * kk[2];
    GRID_LOOP(t, images * mg * osize)
    {
        long long q = t % osize, co = (t / osize) % mg, img = t / (osize * mg);
        long long oidx[3] = {q / (out[1] * out[2]), (q / out[2]) % out[1], q % out[2]};
        const float *c = cols + img * cs + co * taps * isize;
        double acc = bias ? (double)bias[co] : 0.0;
        for (long long a = 0; a < kk[0]; a++) {
            long long t0 = oidx[0] + pad[0] - a * dil[0];
            if (t0 < 0 || t0 % str[0] != 0 || t0 / str[0] >= in[0]) continue;
            for (long long b = 0; b < kk[1]; b++) {
                long long t1 = oidx[1] + pad[1] - b * dil[1];
                if (t1 < 0 || t1 % str[1] != 0 || t1 / str[1] >= in[1]) continue;
                for (long long e = 0; e < kk[2]; e++) {
                    long long t2 = oidx[2] + pad[2] - e * dil[2];
                    if (t2 < 0 || t2 % str[2] != 0 || t2 / str[2] >= in[2]) continue;
                    long long tap = (a * kk[1] + b) * kk[2] + e;
                    long long i = ((t0 / str[0]) * in[1] + t1 / str[1]) * in[2] + t2 / str[2];
                    acc += (double)c[tap * isize + i];
                }
            }
        }
        y[img * ys + co * osize + q] = (float)acc;
    }
}
