package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
)

// OpenRead opens path for reading through Beam's filesystems (local paths,
// gs://, and any other registered scheme, memfs:// in tests). It is a
// tensor.Opener: a pipeline installs it with tensor.SetOpener so that the
// tensor readers, which import no Beam, read Cloud Storage on the workers.
func OpenRead(ctx context.Context, path string) (io.ReadCloser, error) {
	fsys, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r, err := fsys.OpenRead(ctx, path)
	if err != nil {
		fsys.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &fsReader{ReadCloser: r, fsys: fsys}, nil
}

// fsReader closes the filesystem with the file.
type fsReader struct {
	io.ReadCloser
	fsys filesystem.Interface
}

func (r *fsReader) Close() error {
	return errors.Join(r.ReadCloser.Close(), r.fsys.Close())
}

// List returns the files that match glob through Beam's filesystems.
func List(ctx context.Context, glob string) ([]string, error) {
	fsys, err := filesystem.New(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", glob, err)
	}
	defer fsys.Close()
	return fsys.List(ctx, glob)
}

// Exists reports whether path names an existing file, through Beam's
// filesystems.
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
