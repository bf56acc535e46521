// Package files is how steps read files, local or through Beam's filesystems.
//
// It reads local paths out of the box, every
// filesystem Beam knows (gs://, memfs://, ...) once package stepbeam is
// linked (it registers Beam's filesystems as the default), and any scheme a
// program registers (the fashion pipeline serves its embedded data as
// embedded://). A family's step reads through it and stays free of Beam, so
// that the executor and the trainer, which link the family, link no Beam
// package; in a pipeline the same step reads Cloud Storage on its workers.
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

// FS is what a step's reader needs of a filesystem.
type FS interface {
	// OpenRead opens a file for reading.
	OpenRead(ctx context.Context, name string) (io.ReadCloser, error)
	// OpenAt opens a file for reading at offsets (a windowed reader's
	// strips), with its size. A filesystem that only streams can use
	// StreamAt.
	OpenAt(ctx context.Context, name string) (File, error)
	// List returns the files matching glob, sorted; its pattern is in the
	// last path element (dir/*_MTL.txt).
	List(ctx context.Context, glob string) ([]string, error)
}

// File is a file open for reading at offsets, of a known size.
type File interface {
	io.ReaderAt
	io.Closer
	Size() int64
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

// OpenAt opens name for reading at offsets on its filesystem.
func OpenAt(ctx context.Context, name string) (File, error) {
	fs, err := of(name)
	if err != nil {
		return nil, err
	}
	return fs.OpenAt(ctx, name)
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

// Local is the local filesystem. It opens regular files only: a named
// pipe, a device, a socket or a directory is refused with its path and
// kind (OpenRegular), without blocking.
type Local struct{}

// OpenRead implements FS.
func (Local) OpenRead(_ context.Context, name string) (io.ReadCloser, error) {
	f, _, err := OpenRegular(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// OpenAt implements FS: a regular file, read at offsets directly.
func (Local) OpenAt(_ context.Context, name string) (File, error) {
	f, size, err := OpenRegular(name)
	if err != nil {
		return nil, err
	}
	return localFile{f, size}, nil
}

// ErrNotRegular is wrapped by the error of opening an input that is not a
// regular file (a named pipe, a device, a socket, a directory): reading
// one could block forever (a FIFO with no writer) or never end (a device).
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens the local file name for reading, with its size, if it
// is a regular file (following symbolic links). Anything else is refused
// with an error naming the path and what it is, before it is opened for
// reading: it is checked with stat, then opened non-blocking and checked
// again on the open file (it may have been replaced in between), so
// opening never blocks.
func OpenRegular(name string) (*os.File, int64, error) {
	st, err := os.Stat(name)
	if err != nil {
		return nil, 0, err
	}
	if err := regular(name, st); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, 0, err
	}
	if st, err = f.Stat(); err == nil {
		err = regular(name, st)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// regular returns nil for a regular file, else an error naming what it is.
func regular(name string, st os.FileInfo) error {
	m := st.Mode()
	if m.IsRegular() {
		return nil
	}
	kind := "special file"
	switch {
	case m&os.ModeNamedPipe != 0:
		kind = "named pipe (FIFO)"
	case m&os.ModeDevice != 0 || m&os.ModeCharDevice != 0:
		kind = "device"
	case m&os.ModeSocket != 0:
		kind = "socket"
	case m.IsDir():
		kind = "directory"
	}
	return fmt.Errorf("%s: %w: a %s, refused as an input (reading it could block or never end)", name, ErrNotRegular, kind)
}

type localFile struct {
	*os.File
	size int64
}

func (f localFile) Size() int64 { return f.size }

// StreamAt makes a File of a file that can only be streamed: open returns
// the file from offset off on, size is its size, and closeFS is called by
// Close. A read at the stream's position continues it, a read a little
// ahead skips forward, any other reopens the stream at its offset, so reads
// that follow each other (the strips of a window, in file order) go on one
// open stream.
func StreamAt(open func(off int64) (io.ReadCloser, error), size int64, closeFS func() error) File {
	if closeFS == nil {
		closeFS = func() error { return nil }
	}
	return &streamFile{open: open, size: size, closeFS: closeFS}
}

type streamFile struct {
	mu      sync.Mutex
	open    func(off int64) (io.ReadCloser, error)
	size    int64
	closeFS func() error
	cur     io.ReadCloser
	pos     int64
}

// skipLimit is how far ahead a read may be and still continue the stream.
const skipLimit = 1 << 20

func (f *streamFile) Size() int64 { return f.size }

func (f *streamFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= f.size {
		return 0, io.EOF
	}
	if f.cur != nil && off >= f.pos && off-f.pos <= skipLimit {
		if _, err := io.CopyN(io.Discard, f.cur, off-f.pos); err != nil {
			f.drop()
		} else {
			f.pos = off
		}
	}
	if f.cur == nil || f.pos != off {
		f.drop()
		r, err := f.open(off)
		if err != nil {
			return 0, err
		}
		f.cur, f.pos = r, off
	}
	want := min(int64(len(p)), f.size-off)
	n, err := io.ReadFull(f.cur, p[:want])
	f.pos += int64(n)
	if err != nil {
		f.drop()
		return n, err
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (f *streamFile) drop() {
	if f.cur != nil {
		f.cur.Close()
		f.cur = nil
	}
}

func (f *streamFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drop()
	return f.closeFS()
}

// List implements FS.
func (Local) List(_ context.Context, glob string) ([]string, error) {
	m, err := filepath.Glob(glob)
	sort.Strings(m)
	return m, err
}
