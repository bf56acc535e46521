package jobfiles

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A local file is written whole or not at all: a write that fails leaves
// neither the file nor its temporary.
func TestWriteFileLocalIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.json")
	require.NoError(t, os.WriteFile(path, []byte("previous"), 0o644))
	err := WriteFile(context.Background(), "0123456789ab", path, func(w io.Writer) error {
		w.Write([]byte("half"))
		return errors.New("disk full")
	})
	require.ErrorContains(t, err, "disk full")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "previous", string(got), "the failed write replaced nothing")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary left")
	require.NoError(t, WriteFile(context.Background(), "0123456789ab", path, func(w io.Writer) error { _, err := w.Write([]byte("new")); return err }))
	got, _ = os.ReadFile(path)
	assert.Equal(t, "new", string(got))
}

// Temporaries of a run that holds no lock (killed) are removed, with the
// directory they leave empty; those of a live run stay.
func TestRemoveStaleKeepsLiveRuns(t *testing.T) {
	out := t.TempDir()
	live, dead := "0000000000aa", "0000000000bb"
	release, err := LockRun(out, live)
	require.NoError(t, err)
	defer release()
	require.NoError(t, os.MkdirAll(filepath.Join(out, "P1"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(out, "P2"), 0o755))
	for _, f := range []string{"P1/.ndvi.npy." + live + ".tmp", "P1/.ndvi.npy." + dead + ".tmp", "P2/.b.npy." + dead + ".00000016.part",
		".metrics.json." + dead + ".tmp", "P1/ndvi.png", ".beamgpu-run." + dead + ".lock"} {
		require.NoError(t, os.WriteFile(filepath.Join(out, f), nil, 0o644))
	}
	removed, err := RemoveStale(out)
	require.NoError(t, err)
	var rel []string
	for _, r := range removed {
		x, _ := filepath.Rel(out, r)
		rel = append(rel, x)
	}
	assert.ElementsMatch(t, []string{"P1/.ndvi.npy." + dead + ".tmp", "P2/.b.npy." + dead + ".00000016.part", ".metrics.json." + dead + ".tmp", ".beamgpu-run." + dead + ".lock"}, rel)
	assert.FileExists(t, filepath.Join(out, "P1/.ndvi.npy."+live+".tmp"))
	assert.FileExists(t, filepath.Join(out, "P1/ndvi.png"))
	assert.NoDirExists(t, filepath.Join(out, "P2"), "left empty by the removal")
}
