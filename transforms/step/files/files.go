// Package files is how steps read files: local paths out of the box, and
// every filesystem Beam knows (gs://, memfs://, ...) once package stepbeam is
// linked, which registers Beam's filesystems here. A family's step reads
// through it and stays free of Beam, so that the executor and the trainer,
// which link the family, link no Beam package.
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// FS is what a step's reader needs of a filesystem; Beam's
// filesystem.Interface has these methods.
type FS interface {
	// List returns the files matching glob.
	List(ctx context.Context, glob string) ([]string, error)
	// OpenRead opens a file for reading.
	OpenRead(ctx context.Context, name string) (io.ReadCloser, error)
	Close() error
}

// Opener returns the filesystem of path (the scheme of a URL, or local).
type Opener func(ctx context.Context, path string) (FS, error)

var (
	mu     sync.RWMutex
	opener Opener
)

// Register makes open the way to every path (stepbeam registers Beam's
// filesystems); nil restores local files only.
func Register(open Opener) {
	mu.Lock()
	defer mu.Unlock()
	opener = open
}

// Open returns the filesystem of path.
func Open(ctx context.Context, path string) (FS, error) {
	mu.RLock()
	o := opener
	mu.RUnlock()
	if o != nil {
		return o(ctx, path)
	}
	if i := strings.Index(path, "://"); i > 0 {
		return nil, fmt.Errorf("%s: no filesystem for scheme %q in this binary (link package stepbeam for Beam's filesystems)", path, path[:i])
	}
	return Local{}, nil
}

// Local is the local filesystem.
type Local struct{}

// List implements FS.
func (Local) List(_ context.Context, glob string) ([]string, error) {
	m, err := filepath.Glob(glob)
	sort.Strings(m)
	return m, err
}

// OpenRead implements FS.
func (Local) OpenRead(_ context.Context, name string) (io.ReadCloser, error) { return os.Open(name) }

// Close implements FS.
func (Local) Close() error { return nil }

// ReadAll reads the file name, at most limit bytes (an error beyond: a
// bound against inputs that claim to be small).
func ReadAll(ctx context.Context, name string, limit int64) ([]byte, error) {
	fs, err := Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	r, err := fs.OpenRead(ctx, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errors.New("larger than " + fmt.Sprint(limit) + " bytes")
	}
	return b, nil
}
