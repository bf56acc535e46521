// Tile's kernel (ops_tile.go, launched by ops_tile_gpu.go where its strided copy has more
// dimensions than the copy kernel takes).

#include "kernels.cuh"

// tile: y (n elements of size bytes: 1, 2, 4 or 8; shape yd, rank dims) is x (shape xd)
// repeated: y[i0..ik] = x[i0 % xd0 .. ik % xdk].
extern "C" __global__ void tile(const void *x, void *y, long long n, long long size, long long rank, P6(yd), P6(xd))
{
    const long long ydims[MAXR] = A6(yd), xdims[MAXR] = A6(xd);
    GRID_LOOP(t, n)
    {
        long long i = t, src = 0, st = 1;
        for (long long d = rank - 1; d >= 0; d--) {
            long long q = i / ydims[d];
            src += ((i - q * ydims[d]) % xdims[d]) * st;
            st *= xdims[d];
            i = q;
        }
        switch (size) {
        case 1: ((u8 *)y)[t] = ((const u8 *)x)[src]; break;
        case 2: ((unsigned short *)y)[t] = ((const unsigned short *)x)[src]; break;
        case 4: ((unsigned int *)y)[t] = ((const unsigned int *)x)[src]; break;
        default: ((unsigned long long *)y)[t] = ((const unsigned long long *)x)[src]; break;
        }
    }
}
