// The clip step's kernel: the GPU twin of Clip (clip.go). kernels.ptx is its PTX
// (nvcc -ptx -arch=compute_70), embedded by clip.go. Every parameter is 8 bytes
// wide (pointers, long long, double), as beamgpu's device layer passes them.

// clip: y[i] = min(max(x[i], lo), hi) for n values, NaN kept; a 1-D grid-stride loop.
extern "C" __global__ void clip(const float *x, float *y, long long n, double lo, double hi)
{
    float l = (float)lo, h = (float)hi;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        float v = x[i];
        if (v == v) {
            v = fminf(fmaxf(v, l), h);
        }
        y[i] = v;
    }
}
