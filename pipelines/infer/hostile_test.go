package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/beamgpu/beamgpu/transforms/nd"
	ndnpy "github.com/beamgpu/beamgpu/transforms/nd/npy"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lyingNPY writes a .npy whose header declares shape (of float32) and
// whose data is data.
func lyingNPY(t *testing.T, path string, shape []int, data []byte) []byte {
	t.Helper()
	hdr, err := ndnpy.EncodeHeader(nd.Float32, shape)
	require.NoError(t, err)
	b := append(hdr, data...)
	if path != "" {
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
	return b
}

// A .npy header must describe its file: one that declares more rows than
// the file holds (10^6 or 10^7 rows over 10 real ones) or fewer (bytes
// after the array) is an error before anything runs, exit status 2, naming
// both sizes, locally and on an object store (memfs, as gs://); nothing is
// written to --output, not one failure per row promised.
func TestNPYHeaderMustMatchFileSize(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "mlp.onnx")
	mlp(t, model)
	x := fashionRows(t, 10)
	real := x.Data // 10 rows of 784 float32
	for _, c := range []struct {
		name  string
		rows  int
		extra int
		want  []string
	}{
		{"a million rows over 10", 1_000_000, 0, []string{"holds 31488 bytes", "3136000128 bytes in all", "10 of 1000000 rows are there", "a header that claims rows the file does not hold"}},
		{"ten million rows over 10", 10_000_000, 0, []string{"holds 31488 bytes", "31360000128 bytes in all", "10 of 10000000 rows are there"}},
		{"9 rows over 10", 9, 0, []string{"holds 31488 bytes", "28352 bytes in all", "3136 bytes after the array that its header does not describe"}},
		{"10 rows and 3 bytes", 10, 3, []string{"holds 31491 bytes", "31488 bytes in all", "3 bytes after the array"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			in := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".npy")
			file := lyingNPY(t, in, []int{c.rows, 784}, append(append([]byte(nil), real...), make([]byte, c.extra)...))
			code, _, err := runInfer(t, "--model="+model, "--input="+in, "--output="+out, "--backend=cpu")
			assert.Equal(t, 2, code)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "--input: "+in+" holds")
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
			_, statErr := os.Stat(out)
			assert.ErrorIs(t, statErr, os.ErrNotExist, "nothing ran: no output directory")

			url := "memfs://lying/" + filepath.Base(in)
			memfs.Write(url, file)
			code, _, err = runInfer(t, "--model="+model, "--input="+url, "--output=memfs://lying/out", "--backend=cpu")
			assert.Equal(t, 2, code)
			require.Error(t, err)
			assert.Contains(t, err.Error(), url+" holds")
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	// The same file with a true header runs.
	in := filepath.Join(dir, "true.npy")
	lyingNPY(t, in, []int{10, 784}, real)
	code, text, err := runInfer(t, "--model="+model, "--input="+in, "--output="+t.TempDir(), "--backend=cpu")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, text, "rows: 10 in, 10 predicted, 0 failed")
}

// A 240-byte .npy whose header declares (1000000000, 4) float32 (16 GB) is
// refused from its size before anything runs: the command (this test binary
// as the child) exits 2 naming both sizes, with a peak RSS of a process
// that ran nothing (it grew to 6.6 GB and died before).
func TestLyingNPYHeaderRSS(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "lie.npy")
	b := lyingNPY(t, in, []int{1_000_000_000, 4}, make([]byte, 112))
	require.Len(t, b, 240)
	model := filepath.Join(dir, "m.onnx")
	require.NoError(t, os.WriteFile(model, onnxtest.Bytes(onnxtest.Model(17,
		[]*onnxpb.NodeProto{onnxtest.Node("Relu", []string{"x"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Float32, -1, 4)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 4)})), 0o644))
	cmd := exec.Command(os.Args[0], "--model="+model, "--input="+in, "--output="+filepath.Join(dir, "out"), "--backend=cpu", "--progress=0")
	cmd.Env = append(os.Environ(), asMain+"=1")
	outb, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", outb)
	assert.Equal(t, 2, exit.ExitCode(), "%s", outb)
	assert.Contains(t, string(outb), in+" holds 240 bytes, but its header declares a float32 array of shape [1000000000x4]")
	assert.Contains(t, string(outb), "16000000128 bytes in all")
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(outb)
	require.NotNil(t, m, "no VmHWM in %s", outb)
	kb, err := strconv.ParseInt(string(m[1]), 10, 64)
	require.NoError(t, err)
	t.Logf("peak RSS %.1f MB; %s", float64(kb)/1024, outb)
	assert.Less(t, kb, int64(200<<10), "peak RSS under 200 MB")
}

// pngChunk is a PNG chunk: length, type, data and the CRC of type and data.
func pngChunk(typ string, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	b = append(append(b, typ...), data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(append([]byte(typ), data...)))
}

// hugePNG is a small PNG (a few hundred bytes) whose IHDR declares w x h
// pixels of colour type ct (0 gray, 6 RGBA), 8 bits, with valid CRCs, and
// an IDAT of the first rows only.
func hugePNG(t *testing.T, w, h uint32, ct byte) []byte {
	t.Helper()
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, ct, 0, 0, 0)
	// The IDAT of a real small image: valid zlib, far short of w x h.
	var small bytes.Buffer
	require.NoError(t, png.Encode(&small, image.NewGray(image.Rect(0, 0, 8, 8))))
	idat := small.Bytes()[33:] // signature (8) + IHDR chunk (25)
	require.Equal(t, "IDAT", string(idat[4:8]))
	n := binary.BigEndian.Uint32(idat)
	b := []byte("\x89PNG\r\n\x1a\n")
	b = append(b, pngChunk("IHDR", ihdr)...)
	b = append(b, idat[:12+n]...)
	return append(b, pngChunk("IEND", nil)...)
}

// hugeJPEG is a real 16x16 gray JPEG whose SOF0 is changed to declare w x h.
func hugeJPEG(t *testing.T, w, h uint16) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, 16, 16)), nil))
	b := buf.Bytes()
	i := bytes.Index(b, []byte{0xff, 0xc0})
	require.Positive(t, i)
	binary.BigEndian.PutUint16(b[i+5:], h)
	binary.BigEndian.PutUint16(b[i+7:], w)
	return b
}

// An image whose header declares more than --max_image_bytes decoded (a
// PNG of a few hundred bytes declaring 50000 x 50000 RGBA, or 20000 x
// 20000 gray; a JPEG whose SOF declares 65000 x 65000) is its row's
// failure, refused from its header before decoding, naming the size and
// the flag; the other images complete and the counts reconcile. The flag
// moves the bound: 784 bytes passes a 28x28 gray PNG and refuses a 56x56.
func TestImageBombsFailTheirRows(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	x := fashionRows(t, 2)
	gray(t, filepath.Join(dir, "a.png"), x, 0, 28)
	bombs := map[string][]byte{
		"b-rgba.png": hugePNG(t, 50000, 50000, 6),
		"c-gray.png": hugePNG(t, 20000, 20000, 0),
		"d.jpg":      hugeJPEG(t, 65000, 65000),
	}
	for name, b := range bombs {
		require.Less(t, len(b), 1000, name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
		cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
		require.NoError(t, err, "%s is a valid header", name)
		require.Greater(t, cfg.Width, 10000)
	}
	gray(t, filepath.Join(dir, "e.jpg"), x, 1, 28)
	code, text, err := runInfer(t, "--model="+cnnModel, "--input="+dir, "--output="+out, "--backend=cpu")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	assert.Contains(t, text, "rows: 5 in, 2 predicted, 3 failed")
	fails := readLines[step.Failure](t, filepath.Join(out, "failed.jsonl"))
	require.Len(t, fails, 3)
	reasons := map[string]string{}
	for _, f := range fails {
		assert.Equal(t, "decode", f.Step)
		reasons[filepath.Base(f.Input)] = f.Reason
	}
	assert.Contains(t, reasons["b-rgba.png"], "png image of 50000x50000 pixels (4 bytes a pixel): 10000000000 bytes decoded, over --max_image_bytes=268435456; refused from its header, before decoding")
	assert.Contains(t, reasons["c-gray.png"], "png image of 20000x20000 pixels (1 bytes a pixel): 400000000 bytes decoded, over --max_image_bytes=268435456")
	assert.Contains(t, reasons["d.jpg"], "jpeg image of 65000x65000 pixels (1 bytes a pixel): 4225000000 bytes decoded, over --max_image_bytes=268435456")
	rows := readLines[rowLine](t, filepath.Join(out, rowsFile))
	require.Len(t, rows, 5)
	for i, r := range rows {
		assert.Equal(t, i == 0 || i == 4, r.Predicted, r.Key)
	}
	s := readSummary(t, out)
	assert.Equal(t, s.RowsIn, s.RowsPredicted+s.RowsFailed)

	small := t.TempDir()
	gray(t, filepath.Join(small, "a28.png"), x, 0, 28)
	gray(t, filepath.Join(small, "b56.png"), x, 0, 56)
	code, text, err = runInfer(t, "--model="+cnnModel, "--input="+small, "--output="+out, "--backend=cpu", "--max_image_bytes=784")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	assert.Contains(t, text, "rows: 2 in, 1 predicted, 1 failed")
	fails = readLines[step.Failure](t, filepath.Join(out, "failed.jsonl"))
	require.Len(t, fails, 1)
	assert.Equal(t, filepath.Join(small, "b56.png"), fails[0].Input)
	assert.Contains(t, fails[0].Reason, "png image of 56x56 pixels (1 bytes a pixel): 3136 bytes decoded, over --max_image_bytes=784")

	code, _, err = runInfer(t, "--model="+cnnModel, "--input="+small, "--output="+out, "--max_image_bytes=0")
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "--max_image_bytes=0: want a positive size in bytes")
}

// A symbolic link matched by the image glob whose target does not exist is
// its row's failure, naming the path and that it is a dangling symbolic
// link, not a row dropped without a record; a directory matched is no
// image and no row.
func TestDanglingSymlinkIsARow(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	x := fashionRows(t, 1)
	gray(t, filepath.Join(dir, "a.png"), x, 0, 28)
	link := filepath.Join(dir, "b.png")
	require.NoError(t, os.Symlink(filepath.Join(dir, "gone.png"), link))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "c.png"), 0o755))
	code, text, err := runInfer(t, "--model="+cnnModel, "--input="+filepath.Join(dir, "*.png"), "--output="+out, "--backend=cpu")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	assert.Contains(t, text, "rows: 2 in, 1 predicted, 1 failed")
	fails := readLines[step.Failure](t, filepath.Join(out, "failed.jsonl"))
	require.Len(t, fails, 1)
	assert.Equal(t, link, fails[0].Input)
	assert.Equal(t, "read", fails[0].Step)
	assert.Contains(t, fails[0].Reason, link+": a dangling symbolic link: its target "+filepath.Join(dir, "gone.png")+" does not exist")
	rows := readLines[rowLine](t, filepath.Join(out, rowsFile))
	assert.Equal(t, []rowLine{{Row: 0, Key: filepath.Join(dir, "a.png"), Predicted: true}, {Row: 1, Key: link}}, rows)
	s := readSummary(t, out)
	assert.Equal(t, 2, s.RowsIn)
	assert.Equal(t, s.RowsIn, s.RowsPredicted+s.RowsFailed)
}

// One bad row in batches of 8 (a Gather index out of range in row 13 of
// 40): exactly that row fails, with the model's error about its own index;
// the 39 others are predicted, the same as without it; the counts
// reconcile, and summary.json counts the retries that isolated it (a call
// of 8 fails, then its halves of 4, 2 and 1 rows: 6 retries).
func TestOneBadRowFailsAlone(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	model := filepath.Join(dir, "gather.onnx")
	table := make([]float32, 10)
	for i := range table {
		table[i] = float32(i) + 0.5
	}
	require.NoError(t, os.WriteFile(model, onnxtest.Bytes(onnxtest.Model(17,
		[]*onnxpb.NodeProto{onnxtest.Node("Gather", []string{"table", "x"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("x", nd.Int64, -1, 3)},
		[]*onnxpb.ValueInfoProto{onnxtest.Value("y", nd.Float32, -1, 3)},
		onnxtest.Init("table", nd.Of(table, 10)))), 0o644))
	const n, bad = 40, 13
	idx := make([]int64, n*3)
	for i := range idx {
		idx[i] = int64(i % 10)
	}
	idx[bad*3+2] = 77
	in := filepath.Join(dir, "x.npy")
	writeNPY(t, in, nd.Int64, []int{n, 3}, nd.Of(idx, n, 3).Data)
	code, text, err := runInfer(t, "--model="+model, "--input="+in, "--output="+out, "--backend=cpu",
		"--min_batch_size=8", "--max_batch_size=8", "--shard_rows=40")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	assert.Contains(t, text, "rows: 40 in, 39 predicted, 1 failed")
	got, shape := readPredictions(t, out)
	require.Equal(t, []int{n, 3}, shape)
	for i, v := range got {
		if i/3 == bad {
			assert.True(t, math.IsNaN(float64(v)), "row %d", i/3)
			continue
		}
		assert.Equal(t, table[idx[i]], v, "row %d", i/3)
	}
	fails := readLines[step.Failure](t, filepath.Join(out, "failed.jsonl"))
	require.Len(t, fails, 1)
	assert.Equal(t, fmt.Sprintf("#%d", bad), fails[0].Input)
	assert.Equal(t, "onnx", fails[0].Step)
	assert.Contains(t, fails[0].Reason, "index 77 (element 2 of indices) is out of range for axis 0 of size 10")
	s := readSummary(t, out)
	assert.Equal(t, 40, s.RowsIn)
	assert.Equal(t, 39, s.RowsPredicted)
	assert.Equal(t, 1, s.RowsFailed)
	assert.Equal(t, 1, s.Failures)
	assert.Positive(t, s.Retries)
	assert.LessOrEqual(t, s.Retries, int64(6), "one bad row in a call of 8 rows: 3 halvings of 2 calls")
}

// --allow_empty: a glob that matches no file is an error before anything
// runs (exit status 2) without it, and an empty run (0 rows, exit 0) with it.
func TestAllowEmptyGlob(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	glob := filepath.Join(dir, "*.png")
	code, _, err := runInfer(t, "--model="+cnnModel, "--input="+glob, "--output="+out, "--backend=cpu")
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "no files match")
	assert.ErrorContains(t, err, "--allow_empty")
	code, text, err := runInfer(t, "--model="+cnnModel, "--input="+glob, "--output="+out, "--backend=cpu", "--allow_empty")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, text, "rows: 0 in, 0 predicted, 0 failed")
	_, shape := readPredictions(t, out)
	assert.Equal(t, []int{0, 10}, shape)
}
