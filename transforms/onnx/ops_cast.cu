// Cast's kernel (ops_cast.go, launched by ops_cast_gpu.go).

#include "kernels.cuh"

// Element types, as ONNX's TensorProto.DataType numbers them.
enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_INT16 = 5, T_INT32 = 6, T_INT64 = 7, T_BOOL = 9, T_DOUBLE = 11 };

// cast: y = x converted from type from to type to (the T_ codes above). Floats to
// integers truncate toward zero (NaN gives 0; values out of range wrap through int64);
// integers convert exactly to wider types; to bool is x != 0.
extern "C" __global__ void cast(const void *x, void *y, long long n, long long from, long long to)
{
    GRID_LOOP(i, n)
    {
        double f = 0;
        long long v = 0;
        bool isf = false;
        switch (from) {
        case T_FLOAT: f = ((const float *)x)[i]; isf = true; break;
        case T_DOUBLE: f = ((const double *)x)[i]; isf = true; break;
        case T_UINT8: v = ((const u8 *)x)[i]; break;
        case T_BOOL: v = ((const u8 *)x)[i] != 0; break;
        case T_INT8: v = ((const signed char *)x)[i]; break;
        case T_INT16: v = ((const short *)x)[i]; break;
        case T_INT32: v = ((const int *)x)[i]; break;
        case T_INT64: v = ((const long long *)x)[i]; break;
        }
        if (isf && to != T_FLOAT && to != T_DOUBLE && to != T_BOOL) {
            v = f != f ? 0 : (f >= 9223372036854775807.0 ? (long long)0x7fffffffffffffffLL
                                                         : (f <= -9223372036854775808.0 ? (long long)0x8000000000000000ULL : (long long)f));
        }
        switch (to) {
        case T_FLOAT: ((float *)y)[i] = isf ? (float)f : (float)v; break;
        case T_DOUBLE: ((double *)y)[i] = isf ? f : (double)v; break;
        case T_BOOL: ((u8 *)y)[i] = isf ? (f != 0) : (v != 0); break;
        case T_UINT8: ((u8 *)y)[i] = (u8)v; break;
        case T_INT8: ((signed char *)y)[i] = (signed char)v; break;
        case T_INT16: ((short *)y)[i] = (short)v; break;
        case T_INT32: ((int *)y)[i] = (int)v; break;
        case T_INT64: ((long long *)y)[i] = v; break;
        }
    }
}
