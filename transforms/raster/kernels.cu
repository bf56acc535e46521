// CUDA kernels of the raster steps (TOA reflectance, NDVI, true-colour composite),
// the GPU twins of toaPlane (toa.go), ndviPlane (ndvi.go) and CompositeTile /
// stretchValue (composite.go). kernels.ptx beside this file is generated from it by
// `make ptx` (cmd/beamgpu-ptx) and embedded by kernels.go; `make ptx-check` fails
// when the two differ. The executor (runtime/executor/cuda) loads the PTX with
// cuModuleLoadData and launches the kernels by name.
//
// Target: PTX for the virtual architecture compute_70 (nvcc -arch=compute_70 -ptx;
// cmd/beamgpu-ptx, -arch). PTX is not machine code: at module load the driver
// JIT-compiles it for the GPU it finds (and caches the result in ~/.nv/ComputeCache),
// so one file runs on every GPU of compute capability 7.0 or more: V100 (7.0), T4
// (7.5, the GPU of the steps' resource hints), A100 (8.0), L4 (8.9), H100 (9.0), with
// no sm_XX cubin per GPU to build or ship. Nothing here needs more than 7.0 (warp
// shuffles, double precision). CUDA 11.8's nvcc emits PTX ISA 7.8: the driver must
// be R520 or newer.
//
// Numerics: the outputs must match the CPU code within float32 relative 1e-5, so
//   - no fast math: the build passes -fmad=false -prec-div=true -prec-sqrt=true
//     -ftz=false, and the formulas use the round-to-nearest intrinsics (__fadd_rn,
//     __dmul_rn, ...) that the compiler never contracts into an FMA; Go on amd64
//     does not fuse either, so each elementwise result is bit-identical to the CPU's;
//   - where the CPU computes in float64 (TOA, the stretch), the kernel computes in
//     double with the same expression and rounds to float once;
//   - pow (the gamma) is CUDA's double pow (2 ulp) against Go's math.Pow: the rounded
//     8-bit level can differ by one where 255*x^(1/gamma) is within a few ulp of a
//     half integer (rare; the test allows it).
//
// Parameters: gorgonia.org/cu's Function.Launch copies 8 bytes per kernel parameter,
// so every parameter here is 8 bytes wide: pointers, long long, double (float
// values are passed as doubles and converted back, which is exact).
//
// Launch geometry (every kernel of this file): 1-D grid-stride loop over pixels,
// blockDim.x = 256, gridDim.x = min(ceil(n/256), 32*SMs); each thread handles pixel
// i, i+gridDim.x*256, ... Consecutive threads touch consecutive pixels, so every
// load and store of a warp is coalesced.

#define BEAMGPU_NAN __int_as_float(0x7fc00000) // Go's float32(math.NaN())

// toa_value is toaValue of toa.go: float32(float64(dn)*scale + offset), NaN for DN 0.
__device__ __forceinline__ float toa_value(unsigned short dn, double scale, double offset)
{
    if (dn == 0) {
        return BEAMGPU_NAN;
    }
    return __double2float_rn(__dadd_rn(__dmul_rn((double)dn, scale), offset));
}

// ndvi_value is ndviPlane of ndvi.go: (n - r) / (n + r) in float32, NaN where the sum
// is 0; NaN inputs propagate.
__device__ __forceinline__ float ndvi_value(float r, float n)
{
    float sum = __fadd_rn(n, r);
    if (sum == 0.0f) {
        return BEAMGPU_NAN;
    }
    return __fdiv_rn(__fsub_rn(n, r), sum);
}

// toa: one band. out[i] = float((double)dn[i]*scale + offset), NaN where dn[i] == 0.
// scale = Mult/sin(elevation) and offset = Add/sin(elevation) are computed on the host
// in float64, as TOA does.
extern "C" __global__ void toa(const unsigned short *__restrict__ dn, float *__restrict__ out,
                               long long n, double scale, double offset)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = toa_value(dn[i], scale, offset);
    }
}

// toa_ndvi: every band's TOA reflectance and NDVI in one pass over the pixels.
//   dn    nb planes of n DNs, plane b at dn + b*n
//   coef  2*nb doubles: band b's scale at coef[2b], its offset at coef[2b+1]
//   refl  nb planes of n floats (TOA reflectance), plane b at refl + b*n
//   ndvi  n floats, from the reflectance of bands red and nir (plane indices); not
//         written (and may be NULL) when red or nir is negative
// A thread converts pixel i of every band, keeping the red and NIR values in
// registers for the NDVI: the DNs are read once and the reflectance is not read back.
extern "C" __global__ void toa_ndvi(const unsigned short *__restrict__ dn, const double *__restrict__ coef,
                                    long long nb, long long n, long long red, long long nir,
                                    float *__restrict__ refl, float *__restrict__ ndvi)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    bool want_ndvi = red >= 0 && nir >= 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float r = 0.0f, v = 0.0f;
        for (long long b = 0; b < nb; b++) {
            float x = toa_value(dn[b * n + i], __ldg(&coef[2 * b]), __ldg(&coef[2 * b + 1]));
            refl[b * n + i] = x;
            if (b == red) {
                r = x;
            }
            if (b == nir) {
                v = x;
            }
        }
        if (want_ndvi) {
            ndvi[i] = ndvi_value(r, v);
        }
    }
}

// ndvi: NDVI from reflectance planes (the NDVI step alone).
extern "C" __global__ void ndvi(const float *__restrict__ red, const float *__restrict__ nir,
                                float *__restrict__ out, long long n)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = ndvi_value(red[i], nir[i]);
    }
}

// stretch_value is stretchValue of composite.go:
//   x = float64(v-lo) / float64(hi-lo) (the differences in float32);
//   0 if x <= 0 or hi <= lo; 255 if x >= 1; else round(255 * x^inv), halves away
//   from zero (CUDA's round, like Go's math.Round).
__device__ __forceinline__ unsigned char stretch_value(float v, float lo, float hi, double inv)
{
    double x = __ddiv_rn((double)__fsub_rn(v, lo), (double)__fsub_rn(hi, lo));
    if (x <= 0.0 || hi <= lo) {
        return 0;
    }
    if (x >= 1.0) {
        return 255;
    }
    return (unsigned char)round(__dmul_rn(255.0, pow(x, inv)));
}

// composite: the true-colour picture of reflectance planes r, g, b (bands 4, 3, 2):
// each channel stretched from [lo, hi] to [0, 1], raised to inv = 1/gamma (computed on
// the host in float64, as CompositeTile does), scaled to 0..255; alpha 255. A pixel
// where any channel is NaN is transparent black (0, 0, 0, 0).
// lo_*, hi_* are the Stretch's float32 values passed as doubles (exact).
// out: n RGBA pixels (4n bytes; the device buffer is 256-byte aligned, so uchar4
// stores are aligned and a warp writes 128 contiguous bytes).
extern "C" __global__ void composite(const float *__restrict__ r, const float *__restrict__ g,
                                     const float *__restrict__ b, long long n,
                                     double lo_r, double lo_g, double lo_b,
                                     double hi_r, double hi_g, double hi_b,
                                     double inv, uchar4 *__restrict__ out)
{
    float lr = (float)lo_r, lg = (float)lo_g, lb = (float)lo_b;
    float hr = (float)hi_r, hg = (float)hi_g, hb = (float)hi_b;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float vr = r[i], vg = g[i], vb = b[i];
        uchar4 p = make_uchar4(0, 0, 0, 0);
        if (vr == vr && vg == vg && vb == vb) {
            p.x = stretch_value(vr, lr, hr, inv);
            p.y = stretch_value(vg, lg, hg, inv);
            p.z = stretch_value(vb, lb, hb, inv);
            p.w = 255;
        }
        out[i] = p;
    }
}
