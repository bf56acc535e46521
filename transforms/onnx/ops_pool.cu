// The pools' kernel (ops_pool.go, launched by ops_pool_gpu.go).

#include "kernels.cuh"

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
