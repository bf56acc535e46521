// RoiAlign's kernel (ops_roialign.go, launched by ops_roialign_gpu.go).

#include "kernels.cuh"

// roi_sample is the bilinear sample at (y, x) of an h x w plane, 0 outside [-1, h] x
// [-1, w]; with mx the largest of its four weighted corners (ops_roialign.go's
// bilinearSample).
__device__ __forceinline__ double roi_sample(const float *p, double y, double x, long long h, long long w, long long mx)
{
    if (y < -1 || y > (double)h || x < -1 || x > (double)w) return 0;
    y = y > 0 ? y : 0;
    x = x > 0 ? x : 0;
    long long yl = (long long)y, xl = (long long)x, yh = yl + 1, xh = xl + 1;
    if (yl >= h - 1) {
        yl = yh = h - 1;
        y = (double)(h - 1);
    }
    if (xl >= w - 1) {
        xl = xh = w - 1;
        x = (double)(w - 1);
    }
    double ly = y - yl, lx = x - xl, hy = 1 - ly, hx = 1 - lx;
    double a = hy * hx * p[yl * w + xl], b = hy * lx * p[yl * w + xh], c = ly * hx * p[yh * w + xl],
           d = ly * lx * p[yh * w + xh];
    if (mx) {
        double m = a;
        if (b > m) m = b;
        if (c > m) m = c;
        if (d > m) m = d;
        return m;
    }
    return a + b + c + d;
}

// roialign_f32: y[r, c, ph, pw] (R x C x oh x ow) is bin (ph, pw) of region r (rois[r] =
// x1, y1, x2, y2; its image bidx[r] of x, N x C x h x w): the average (mx = 0) or maximum
// of its samples, one thread each, as ops_roialign.go computes it. A batch index out of
// range sets *bad and writes 0.
extern "C" __global__ void roialign_f32(const float *x, const float *rois, const long long *bidx, float *y,
                                        long long nimg, long long nroi, long long ch, long long h, long long w,
                                        long long oh, long long ow, long long sampling, double scale,
                                        long long half_pixel, long long mx, unsigned int *bad)
{
    GRID_LOOP(t, nroi * ch * oh * ow)
    {
        long long pw = t % ow, ph = (t / ow) % oh, c = (t / (ow * oh)) % ch, r = t / (ow * oh * ch);
        long long b = bidx[r];
        if (b < 0 || b >= nimg) {
            *bad = 1;
            y[t] = 0;
            continue;
        }
        double off = half_pixel ? 0.5 : 0.0;
        const float *q = rois + r * 4;
        double x0 = q[0] * scale - off, y0 = q[1] * scale - off;
        double rw = q[2] * scale - off - x0, rh = q[3] * scale - off - y0;
        if (!half_pixel) {
            rw = rw > 1 ? rw : 1;
            rh = rh > 1 ? rh : 1;
        }
        double bh = rh / oh, bw = rw / ow;
        long long gh = sampling > 0 ? sampling : (long long)ceil(rh / oh);
        long long gw = sampling > 0 ? sampling : (long long)ceil(rw / ow);
        long long count = gh * gw > 1 ? gh * gw : 1;
        const float *p = x + (b * ch + c) * h * w;
        double acc = 0;
        bool first = true;
        for (long long iy = 0; iy < gh; iy++) {
            double yy = y0 + ph * bh + (iy + 0.5) * bh / gh;
            for (long long ix = 0; ix < gw; ix++) {
                double xx = x0 + pw * bw + (ix + 0.5) * bw / gw;
                double v = roi_sample(p, yy, xx, h, w, mx);
                if (!mx) {
                    acc += v;
                } else if (first) {
                    acc = v;
                    first = false;
                } else if (v > acc) {
                    acc = v;
                }
            }
        }
        y[t] = (float)(mx ? acc : acc / count);
    }
}
