// Package files is how steps read files: local paths out of the box, every
// filesystem Beam knows (gs://, memfs://, ...) once package stepbeam is
// linked (it registers Beam's filesystems as the default), and any scheme a
// program registers (the fashion pipeline serves its embedded data as
// embedded://). A family's step reads through it and stays free of Beam, so
// that the executor and the trainer, which link the family, link no Beam
// package; in a pipeline the same step reads Cloud Storage on its workers.
package files

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// FS is what a step's reader needs of a filesystem.
type FS interface {
	// OpenRead opens a file for reading.
	OpenRead(ctx context.Context, name string) (io.ReadCloser, error)
	// List returns the files matching glob, sorted.
	List(ctx context.Context, glob string) ([]string, error)
}

var (
	mu       sync.RWMutex
	byScheme = map[string]FS{}
	fallback FS // paths of no registered scheme; nil: Local
)

// Register makes fs serve the paths of scheme ("gs" for gs://...). The
// scheme "" registers the default, for every path of no registered scheme;
// package stepbeam registers Beam's filesystems so. A nil fs removes the
// registration.
func Register(scheme string, fs FS) {
	mu.Lock()
	defer mu.Unlock()
	switch {
	case scheme == "":
		fallback = fs
	case fs == nil:
		delete(byScheme, scheme)
	default:
		byScheme[scheme] = fs
	}
}

// of returns the filesystem of path.
func of(path string) (FS, error) {
	mu.RLock()
	defer mu.RUnlock()
	scheme, _, url := strings.Cut(path, "://")
	if url && !strings.ContainsAny(scheme, "/\\") {
		if fs, ok := byScheme[scheme]; ok {
			return fs, nil
		}
		if fallback == nil {
			return nil, fmt.Errorf("%s: no filesystem for %s:// paths in this program (package stepbeam registers Beam's)", path, scheme)
		}
	}
	if fallback != nil {
		return fallback, nil
	}
	return Local{}, nil
}

// OpenRead opens name for reading on its filesystem.
func OpenRead(ctx context.Context, name string) (io.ReadCloser, error) {
	fs, err := of(name)
	if err != nil {
		return nil, err
	}
	return fs.OpenRead(ctx, name)
}

// List returns the files matching glob on its filesystem.
func List(ctx context.Context, glob string) ([]string, error) {
	fs, err := of(glob)
	if err != nil {
		return nil, err
	}
	return fs.List(ctx, glob)
}

// ReadAll reads the file name, at most limit bytes: a larger file is an
// error naming it and the bound.
func ReadAll(ctx context.Context, name string, limit int64) ([]byte, error) {
	r, err := OpenRead(ctx, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return b, nil
}

// Local is the local filesystem.
type Local struct{}

// OpenRead implements FS.
func (Local) OpenRead(_ context.Context, name string) (io.ReadCloser, error) { return os.Open(name) }

// List implements FS.
func (Local) List(_ context.Context, glob string) ([]string, error) {
	m, err := filepath.Glob(glob)
	sort.Strings(m)
	return m, err
}
