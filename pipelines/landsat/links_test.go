package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// otherScene copies the package's scene to dir with the product ID id.
func otherScene(t *testing.T, dir, id string) {
	t.Helper()
	copyDir(t, sceneDir(), dir)
	editMTL(t, dir, `LANDSAT_PRODUCT_ID = "`+scene+`"`, `LANDSAT_PRODUCT_ID = "`+id+`"`)
}

// Scene directories that are symlinks are followed, as directories are;
// a link that cannot be followed (dangling, a loop) or that leads to a
// directory holding it (a cycle) is a failed scene with the reason, never
// dropped; the counts reconcile.
func TestSymlinkedSceneDirectories(t *testing.T) {
	elsewhere := t.TempDir()
	linked := scene[:len(scene)-1] + "2"
	otherScene(t, filepath.Join(elsewhere, "linked"), linked)

	// A directory whose only scene is a symlink.
	only := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "linked"), filepath.Join(only, "s")))
	scenes, err := discoverScenes(only)
	require.NoError(t, err, "a directory of symlinked scene directories")
	assert.Equal(t, []string{filepath.Join(only, "s")}, scenes)

	in := t.TempDir()
	copyDir(t, sceneDir(), filepath.Join(in, "a_real"))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "linked"), filepath.Join(in, "b_link")))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "missing"), filepath.Join(in, "c_dangling")))
	require.NoError(t, os.Symlink("d_loop", filepath.Join(in, "d_loop")))
	require.NoError(t, os.Symlink(in, filepath.Join(in, "e_parent")))
	require.NoError(t, os.Symlink("/", filepath.Join(in, "f_root")))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "notes.txt"), nil, 0o644))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "notes.txt"), filepath.Join(in, "g_file")))
	scenes, err = discoverScenes(in)
	require.NoError(t, err)
	var names []string
	for _, s := range scenes {
		names = append(names, filepath.Base(s))
	}
	assert.Equal(t, []string{"a_real", "b_link", "c_dangling", "d_loop", "e_parent", "f_root"}, names, "a link to a file is no scene")

	sum, out := runScenes(t, scenes, backend.CPU, 16)
	assert.Equal(t, []int{6, 2, 4}, []int{sum.In, sum.Done, sum.Failed})
	assert.FileExists(t, filepath.Join(out, scene, "ndvi.npy"))
	assert.FileExists(t, filepath.Join(out, linked, "ndvi.npy"), "the symlinked scene")
	reasons := map[string]string{}
	for _, f := range readFailures(t, out) {
		reasons[filepath.Base(f.Input)] = f.Reason
		assert.Equal(t, "scan", f.Step)
	}
	assert.Contains(t, reasons["c_dangling"], "dangling symlink to "+filepath.Join(elsewhere, "missing"))
	assert.Contains(t, reasons["d_loop"], "a loop of symlinks")
	assert.Contains(t, reasons["e_parent"], "symlink to "+in+", a directory that holds it (a cycle)")
	assert.Contains(t, reasons["f_root"], "symlink to /, a directory that holds it (a cycle)")
	assert.Len(t, reasons, 4)
}

// --output that is the input directory of scenes, or a directory in it,
// would be read as a scene by the next run: refused with status 2 before
// anything is written. A scene whose products would be written into its own
// directory fails, with the reason.
func TestOutputInTheInputIsRefused(t *testing.T) {
	in := t.TempDir()
	copyDir(t, sceneDir(), filepath.Join(in, "a"))
	defer func() { *input, *output = "", defaultOutput }()
	for _, out := range []string{in, filepath.Join(in, "out"), "/"} {
		*input, *output = in, out
		var buf bytes.Buffer
		code, err := run(context.Background(), &buf)
		assert.Equal(t, 2, code, out)
		require.Error(t, err, out)
		if out == "/" {
			assert.ErrorContains(t, err, "--output / is the filesystem root")
		} else {
			assert.ErrorContains(t, err, "--input "+in+"/*", out)
		}
	}
	assert.Len(t, files(t, in), len(files(t, sceneDir())), "nothing written in the input")
	assert.NoDirExists(t, filepath.Join(in, "out"))
	assert.NoFileExists(t, filepath.Join(in, summaryFile))

	// One scene, named as its product, with --output its parent.
	parent := t.TempDir()
	own := filepath.Join(parent, scene)
	copyDir(t, sceneDir(), own)
	sum, err := execute(context.Background(), Config{Scenes: []string{own}, Output: parent, TileSize: 16}, selector(t, backend.CPU), new(bytes.Buffer))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 0, 1}, []int{sum.In, sum.Done, sum.Failed})
	fails := readFailures(t, parent)
	require.Len(t, fails, 1)
	assert.Equal(t, []string{own, "scan"}, []string{fails[0].Input, fails[0].Step})
	assert.Contains(t, fails[0].Reason, "its products would be written into its own directory")
	for _, f := range files(t, own) {
		assert.False(t, strings.HasSuffix(f, ".npy") || strings.HasSuffix(f, ".png"), f)
	}
}
