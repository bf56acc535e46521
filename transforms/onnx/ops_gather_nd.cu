// GatherElements, ScatterElements, GatherND and ScatterND's kernels (ops_gather_elements.go
// and ops_gather_nd.go, launched by their _gpu.go files).

#include "kernels.cuh"

// move_elem copies element si of src to element di of dst, elements of size bytes.
__device__ __forceinline__ void move_elem(void *dst, long long di, const void *src, long long si, long long size)
{
    switch (size) {
    case 1: ((u8 *)dst)[di] = ((const u8 *)src)[si]; break;
    case 2: ((unsigned short *)dst)[di] = ((const unsigned short *)src)[si]; break;
    case 4: ((unsigned int *)dst)[di] = ((const unsigned int *)src)[si]; break;
    default: ((unsigned long long *)dst)[di] = ((const unsigned long long *)src)[si]; break;
    }
}

// elements_gs: for each element t of indices (shape id, rank dims; int64 or int32), its
// data offset is t's coordinates at data's strides ds with the index (negative counted
// from axis_len) on axis. Gather: y[t] = x[offset]; scatter: y[offset] = x[t] (x the
// updates, y already data's copy). An index out of range sets *bad and moves nothing.
extern "C" __global__ void elements_gs(void *y, const void *x, const void *idx, long long size, long long n,
                                       long long rank, long long axis, long long axis_len, long long idx64,
                                       long long scatter, unsigned int *bad, P6(id), P6(ds))
{
    const long long idims[MAXR] = A6(id), dst[MAXR] = A6(ds);
    GRID_LOOP(t, n)
    {
        long long v = idx64 ? ((const long long *)idx)[t] : (long long)((const int *)idx)[t];
        if (v < 0) v += axis_len;
        if (v < 0 || v >= axis_len) {
            *bad = 1;
            continue;
        }
        long long i = t, off = 0;
        for (long long d = rank - 1; d >= 0; d--) {
            long long q = i / idims[d];
            off += (d == axis ? v : i - q * idims[d]) * dst[d];
            i = q;
        }
        if (scatter) {
            move_elem(y, off, x, t, size);
        } else {
            move_elem(y, t, x, off, size);
        }
    }
}

// nd_gs: batches x tuples x inner elements; tuple (b, u) is m int64 indices (negative
// counted from the axis's end) into the axes dd of data's batch b (per_batch elements
// each), naming a slice of inner elements. Gather: y[t] = x[offset]; scatter: y[offset] =
// x[t]. An index out of range sets *bad and moves nothing.
extern "C" __global__ void nd_gs(void *y, const void *x, const long long *idx, long long size, long long batches,
                                 long long tuples, long long m, long long inner, long long per_batch,
                                 long long scatter, unsigned int *bad, P6(dd))
{
    const long long dims[MAXR] = A6(dd);
    GRID_LOOP(t, batches * tuples * inner)
    {
        long long k = t % inner, bu = t / inner, b = bu / tuples;
        const long long *tup = idx + bu * m;
        long long off = 0;
        bool ok = true;
        for (long long j = 0; j < m; j++) {
            long long v = tup[j];
            if (v < 0) v += dims[j];
            if (v < 0 || v >= dims[j]) ok = false;
            off = off * dims[j] + v;
        }
        if (!ok) {
            *bad = 1;
            continue;
        }
        off = b * per_batch + off * inner + k;
        if (scatter) {
            move_elem(y, off, x, t, size);
        } else {
            move_elem(y, t, x, off, size);
        }
    }
}
