// The normalisations' kernels (ops_norm.go, launched by ops_norm_gpu.go).

#include "kernels.cuh"

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
