#!/usr/bin/python3
"""The peer of package gemm: numpy's float32 matrix product (a @ b, which
calls the BLAS numpy is linked with: OpenBLAS on Debian) at the given shapes.

For each MxKxN it multiplies an M x K by a K x N float32 matrix of normal
random values, once to warm up, then --repeat times, and prints one line
with the best time:

    numpy_gemm shape=8192x784x256 seconds=0.0345 gflops=95.2 blas=openblas threads=2

GFLOP/s counts 2 flops per multiply-add. Run with /usr/bin/python3 (Debian's
python3-numpy).
"""
import argparse
import time

import numpy as np


def blas_name():
    try:
        cfg = np.show_config(mode="dicts")  # numpy >= 1.25
        return cfg["Build Dependencies"]["blas"]["name"]
    except Exception:
        try:
            import ctypes
            lib = ctypes.CDLL("libopenblas.so.0")
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return "openblas-" + lib.openblas_get_corename().decode()
        except OSError:
            return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="+", help="MxKxN, e.g. 8192x784x256")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    r = np.random.default_rng(1)
    for s in args.shapes:
        m, k, n = (int(v) for v in s.split("x"))
        a = r.standard_normal((m, k), dtype=np.float32)
        b = r.standard_normal((k, n), dtype=np.float32)
        c = a @ b  # warm-up (and the allocation of the result's pages)
        del c
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            c = a @ b
            best = min(best, time.perf_counter() - t)
            del c
        threads = "?"
        try:
            import os
            threads = os.environ.get("OPENBLAS_NUM_THREADS") or str(len(os.sched_getaffinity(0)))
        except Exception:
            pass
        print(f"numpy_gemm shape={s} seconds={best:.4f} gflops={2 * m * k * n / best / 1e9:.1f} "
              f"blas={blas_name()} threads={threads}", flush=True)


if __name__ == "__main__":
    main()
