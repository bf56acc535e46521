package tensor

import (
	"bytes"
	"compress/gzip"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// fashionDir is the copy of the Fashion-MNIST test set shipped with the
// fashion pipeline.
const fashionDir = "../../pipelines/fashion/data"

// systemFashionDir is where Debian's dataset-fashion-mnist installs it.
const systemFashionDir = "/usr/share/datasets/fashion-mnist"

// testSet loads the shipped Fashion-MNIST test set (required: it is part of
// the repository).
func testSet(t testing.TB) Batch {
	t.Helper()
	b, err := ReadDataset(filepath.Join(fashionDir, "t10k-images-idx3-ubyte.gz"), filepath.Join(fashionDir, "t10k-labels-idx1-ubyte.gz"))
	require.NoError(t, err)
	return b
}

// trainSet loads the Fashion-MNIST training set, or skips the test.
func trainSet(t testing.TB) Batch {
	t.Helper()
	img := filepath.Join(systemFashionDir, "train-images-idx3-ubyte.gz")
	if _, err := os.Stat(img); err != nil {
		t.Skipf("Fashion-MNIST training set not installed (%v): apt-get install dataset-fashion-mnist", err)
	}
	b, err := ReadDataset(img, filepath.Join(systemFashionDir, "train-labels-idx1-ubyte.gz"))
	require.NoError(t, err)
	return b
}

func randBatch(r *rand.Rand, rows, cols int) Batch {
	b := Batch{Source: "rand", Rows: rows, Cols: cols, X: make([]float32, rows*cols)}
	for i := range b.X {
		b.X[i] = float32(r.NormFloat64())
	}
	return b
}

func idxBytes(t testing.TB, typ byte, dims []int, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, EncodeIDX(&buf, IDX{Name: "test", Type: typ, Dims: dims, Data: data}))
	return buf.Bytes()
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}
