// Resize's and Upsample's kernel (ops_resize.go, launched by ops_resize_gpu.go): one axis
// of a separable resize. The taps of each output coordinate are computed here from the
// axis's parameters as resize.taps computes them on the host, in double.

#include "kernels.cuh"

// The modes, in the order of ops_resize.go's constants.
enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum {
    CT_HALF_PIXEL,
    CT_HALF_PIXEL_SYMMETRIC,
    CT_PYTORCH_HALF_PIXEL,
    CT_ALIGN_CORNERS,
    CT_ASYMMETRIC,
    CT_TF_HALF_PIXEL_FOR_NN,
    CT_TF_CROP_AND_RESIZE,
};
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };

// resize_original maps output coordinate o of an axis of lengths in -> out to the input's.
__device__ __forceinline__ double resize_original(long long coord, long long o, long long in, long long out,
                                                  double s, double roiLo, double roiHi)
{
    double x = (double)o, inF = (double)in, outF = s * inF;
    switch (coord) {
    case CT_HALF_PIXEL: return (x + 0.5) / s - 0.5;
    case CT_HALF_PIXEL_SYMMETRIC: {
        double adj = (double)out / outF;
        double center = inF / 2;
        double off = center * (1 - adj);
        return off + (x + 0.5) / s - 0.5;
    }
    case CT_PYTORCH_HALF_PIXEL:
        if (out <= 1) return 0;
        return (x + 0.5) / s - 0.5;
    case CT_ALIGN_CORNERS:
        if (outF == 1) return 0;
        return x * (inF - 1) / (outF - 1);
    case CT_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / s;
    case CT_TF_CROP_AND_RESIZE: {
        double v;
        if (outF == 1) {
            v = (roiHi - roiLo) * (inF - 1) / 2;
        } else {
            v = x * (roiHi - roiLo) * (inF - 1) / (outF - 1);
        }
        return v + roiLo * (inF - 1);
    }
    default: return x / s;
    }
}

__device__ __forceinline__ double resize_cubic(double d, double a)
{
    d = fabs(d);
    double d2 = d * d;
    double d3 = d * d2;
    if (d <= 1) return (a + 2) * d3 - (a + 3) * d2 + 1;
    if (d < 2) return a * d3 - 5 * a * d2 + 8 * a * d - 4 * a;
    return 0;
}

__device__ __forceinline__ double resize_weight(long long mode, double d, double a)
{
    if (mode == RS_CUBIC) return resize_cubic(d, a);
    double w = 1 - fabs(d);
    return w > 0 ? w : 0;
}

// resize_axis_f32: y (outer x out x inner) is x (outer x in x inner) resized along its middle
// axis: mode, coord and near as ops_resize.go's constants, s the axis's scale, roi its
// tf_crop_and_resize region, a cubic_coeff_a, excl exclude_outside, aa antialias, e
// extrapolation_value.
extern "C" __global__ void resize_axis_f32(const float *x, float *y, long long outer, long long in, long long out,
                                           long long inner, long long mode, long long coord, long long near, double s,
                                           double roiLo, double roiHi, double a, long long excl, long long aa, double e)
{
    GRID_LOOP(t, outer * out * inner)
    {
        long long q = t % inner, o = (t / inner) % out, ob = t / (inner * out);
        const float *src = x + ob * in * inner + q;
        double xo = resize_original(coord, o, in, out, s, roiLo, roiHi);
        if (coord == CT_TF_CROP_AND_RESIZE && (xo < 0 || xo > (double)(in - 1))) {
            y[t] = (float)e;
            continue;
        }
        double x0 = floor(xo);
        double ratio = xo - x0;
        if (mode == RS_NEAREST) {
            long long i = (long long)x0;
            if (ratio != 0) {
                switch (near) {
                case NM_ROUND_PREFER_FLOOR:
                    if (ratio > 0.5) i++;
                    break;
                case NM_ROUND_PREFER_CEIL:
                    if (ratio >= 0.5) i++;
                    break;
                case NM_CEIL: i++; break;
                case NM_SIMPLE:
                    if (s < 1) i++;
                    break;
                default: break;
                }
            }
            i = i < 0 ? 0 : (i >= in ? in - 1 : i);
            y[t] = src[i * inner];
            continue;
        }
        double support = mode == RS_CUBIC ? 2 : 1;
        double sc = (aa && s < 1) ? s : 1;
        long long start = (long long)floor(-support / sc) + 1;
        long long n = 2 - 2 * start;
        long long first = (long long)x0 + start;
        if (ratio == 0) first--;
        // The weights' sums: all of them (antialias normalises), and those inside the
        // axis (exclude_outside renormalises).
        double sum = 0, sumIn = 0;
        for (long long j = 0; j < n; j++) {
            double w = resize_weight(mode, ((double)(first + j) - xo) * sc, a);
            sum += w;
        }
        double norm = sc != 1 ? sum : 1;
        if (excl) {
            for (long long j = 0; j < n; j++) {
                long long i = first + j;
                double w = resize_weight(mode, ((double)i - xo) * sc, a) / norm;
                if (i >= 0 && i < in) sumIn += w;
            }
        }
        double acc = 0;
        for (long long j = 0; j < n; j++) {
            long long i = first + j;
            double w = resize_weight(mode, ((double)i - xo) * sc, a) / norm;
            if (excl) w = (i < 0 || i >= in) ? 0 : w / sumIn;
            if (w == 0) continue;
            i = i < 0 ? 0 : (i >= in ? in - 1 : i);
            acc += w * (double)src[i * inner];
        }
        y[t] = (float)acc;
    }
}
