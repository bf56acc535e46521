// The reductions' kernel (ops_reduce.go, launched by ops_reduce_gpu.go; GlobalAveragePool
// launches it too).

#include "kernels.cuh"

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
