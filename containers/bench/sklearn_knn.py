#!/usr/bin/python3
"""The peer of the fashion pipeline's kNN: scikit-learn's brute-force
KNeighborsClassifier (numpy's BLAS computes the distances) on the same data.

Classifies the 10,000 Fashion-MNIST test images against the 60,000 training
images (pixels scaled by 1/255, Euclidean distance), as
`go run ./pipelines/fashion --model=knn` does, and prints one line:

    sklearn_knn k=5 weights=distance load_s=... fit_predict_s=... total_s=... accuracy=...

total_s is the whole process from its start (interpreter and imports
included), so it compares with the pipeline process's wall time. With
--predictions FILE it writes index,label,predicted per image (the columns of
the pipeline's predictions.csv) to compare the two classifiers' outputs.

Needs Debian's python3-sklearn and dataset-fashion-mnist; run with
/usr/bin/python3 (Debian's packages are not on other interpreters' paths).
"""
import time

START = time.perf_counter()

import argparse  # noqa: E402
import gzip  # noqa: E402
import os  # noqa: E402
import struct  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--weights", default="distance", choices=["uniform", "distance"])
    ap.add_argument("--predictions", default="", help="write index,label,predicted here")
    args = ap.parse_args()

    def load(prefix):
        x = read_idx(os.path.join(args.data_dir, prefix + "-images-idx3-ubyte.gz"))
        y = read_idx(os.path.join(args.data_dir, prefix + "-labels-idx1-ubyte.gz"))
        return (x.reshape(len(x), -1).astype(np.float32) / np.float32(255)), y

    xtr, ytr = load("train")
    xte, yte = load("t10k")
    loaded = time.perf_counter()
    clf = KNeighborsClassifier(n_neighbors=args.k, weights=args.weights, algorithm="brute")
    clf.fit(xtr, ytr)
    pred = clf.predict(xte)
    done = time.perf_counter()
    if args.predictions:
        with open(args.predictions, "w") as f:
            f.write("index,label,predicted\n")
            for i, (y, p) in enumerate(zip(yte, pred)):
                f.write(f"{i},{y},{p}\n")
    print(f"sklearn_knn k={args.k} weights={args.weights} load_s={loaded - START:.3f} "
          f"fit_predict_s={done - loaded:.3f} total_s={done - START:.3f} "
          f"accuracy={float(np.mean(pred == yte)):.4f}")


if __name__ == "__main__":
    main()
