package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyToMemfs writes local files into memfs:// (an object store in
// memory, as Cloud Storage is on Dataflow) and returns their URLs.
func copyToMemfs(t *testing.T, prefix string, files ...string) []string {
	t.Helper()
	var urls []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		u := prefix + "/" + filepath.Base(f)
		memfs.Write(u, data)
		urls = append(urls, u)
	}
	return urls
}

// The whole pipeline reads its images, labels and model, and writes its
// outputs, through Beam's filesystems: here memfs, on Dataflow gs://.
func TestImagesModelAndOutputsOnAnObjectStore(t *testing.T) {
	dir := t.TempDir()
	src := slice(t, dir, "part", 300)
	copyToMemfs(t, "memfs://bucket/in", src.Images, src.Labels, testModel)
	memfs.Write("memfs://bucket/in/readme.txt", []byte("not IDX"))
	defer func() { *input, *modelPath, *output = "", "", "out/fashion" }()
	*input, *modelPath, *output = "memfs://bucket/in", "memfs://bucket/in/"+shippedModel, "memfs://bucket/out"

	cfg, err := configFromFlags()
	require.NoError(t, err)
	require.Len(t, cfg.Sources, 1)
	assert.Equal(t, "memfs://bucket/in/part-images-idx3-ubyte", cfg.Sources[0].Images)
	assert.Equal(t, "memfs://bucket/in/part-labels-idx1-ubyte", cfg.Sources[0].Labels)

	var out bytes.Buffer
	code, err := run(context.Background(), &out)
	require.NoError(t, err, out.String())
	require.Equal(t, 0, code)
	assert.Contains(t, out.String(), "records: 300 in, 300 predicted, 0 failed")
	var m metrics
	require.NoError(t, json.Unmarshal(readMemfs(t, "memfs://bucket/out/"+metricsFile), &m))
	assert.Equal(t, 300, m.Count)
	assert.Equal(t, 300, m.Labelled)
	csv := string(readMemfs(t, "memfs://bucket/out/"+predictionsFile))
	assert.Len(t, strings.Split(strings.TrimSpace(csv), "\n"), 301)
}

func readMemfs(t *testing.T, url string) []byte {
	t.Helper()
	r, err := files.OpenRead(context.Background(), url)
	require.NoError(t, err)
	defer r.Close()
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	return data
}

// Remote inputs are listed as an object store lists them; a missing model
// or training set is named.
func TestRemoteDiscoveryAndErrors(t *testing.T) {
	copyToMemfs(t, "memfs://b2/sets", testImages, testLabels)
	memfs.Write("memfs://b2/sets/extra-images-idx3-ubyte.gz", []byte("x"))
	memfs.Write("memfs://b2/sets/nested/deep-images-idx3-ubyte.gz", []byte("x"))
	got, err := discoverSources("memfs://b2/sets/", 64)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, tensor.Source{Images: "memfs://b2/sets/extra-images-idx3-ubyte.gz", BatchRows: 64, Height: 28, Width: 28, Classes: 10}, got[0])
	assert.Equal(t, "memfs://b2/sets/t10k-labels-idx1-ubyte.gz", got[1].Labels)

	one, err := discoverSources("memfs://b2/sets/t10k-images-idx3-ubyte.gz", 64)
	require.NoError(t, err)
	require.Len(t, one, 1)
	assert.Equal(t, "memfs://b2/sets/t10k-labels-idx1-ubyte.gz", one[0].Labels)

	_, err = discoverSources("memfs://b2/none-images-idx3-ubyte.gz", 64)
	assert.ErrorContains(t, err, "--input memfs://b2/none-images-idx3-ubyte.gz: no such object")
	_, err = discoverSources("memfs://b2/empty", 64)
	assert.ErrorContains(t, err, "--input memfs://b2/empty: no *images-idx3-ubyte* object")

	_, err = trainingSet("memfs://b2/sets", 64)
	assert.ErrorContains(t, err, "memfs://b2/sets/train-images-idx3-ubyte.gz is missing")

	defer func() { *modelPath, *output = "", "out/fashion" }()
	*modelPath, *output = "memfs://b2/no-model.bgmlp", t.TempDir()
	_, err = configFromFlags()
	assert.ErrorContains(t, err, "--model_path: memfs://b2/no-model.bgmlp")
}

// The embedded test set and model are read from the binary, on any runner.
func TestEmbeddedDataIsReadFromTheBinary(t *testing.T) {
	srcs, err := discoverSources(embeddedImages, 4096)
	require.NoError(t, err)
	require.Len(t, srcs, 1)
	assert.Equal(t, embeddedScheme+"t10k-labels-idx1-ubyte.gz", srcs[0].Labels)
	d, err := tensor.DecodeSource(srcs[0])
	require.NoError(t, err)
	assert.Equal(t, 10000, d.Rows)
	assert.Equal(t, "t10k-images-idx3-ubyte.gz", d.Batches[0].Source)
	m, err := tensor.LoadMLP(embeddedModel)
	require.NoError(t, err)
	assert.Equal(t, imageDims, m.Dims())
	_, err = tensor.LoadMLP(embeddedScheme + "other.bgmlp")
	assert.ErrorContains(t, err, "embedded://other.bgmlp: not embedded in this binary")
}
