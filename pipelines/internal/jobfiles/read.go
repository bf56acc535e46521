package jobfiles

import (
	"context"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/step/files"
	_ "github.com/beamgpu/beamgpu/transforms/step/stepbeam" // Beam's filesystems serve package files
)

// List returns the files that match glob, through package files (Beam's
// filesystems: local, gs://, memfs:// in tests).
func List(ctx context.Context, glob string) ([]string, error) { return files.List(ctx, glob) }

// Exists reports whether path names an existing file, through package files.
func Exists(ctx context.Context, path string) (bool, error) {
	got, err := List(ctx, path)
	if err != nil {
		return false, err
	}
	for _, g := range got {
		if strings.TrimSuffix(g, "/") == strings.TrimSuffix(path, "/") {
			return true, nil
		}
	}
	return false, nil
}
