package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"cloud.google.com/go/storage"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/gcsx"
)

// List returns the files matching glob (local paths, gs://, memfs:// in
// tests, ...), through Beam's filesystems.
func List(ctx context.Context, glob string) ([]string, error) {
	fsys, err := filesystem.New(ctx, glob)
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	return fsys.List(ctx, glob)
}

// FileAt is a file open for reading at offsets.
type FileAt interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// OpenAt opens a file for reading at offsets, through Beam's filesystems.
//
// Reading at offsets is what a windowed reader needs, and Beam's
// filesystems only open streams. Local files are read at offsets directly;
// Cloud Storage objects with ranged reads; any other filesystem by
// reopening its stream and skipping forward. Reads that follow each other
// (the strips of a window, in file order) continue one open stream.
func OpenAt(ctx context.Context, name string) (FileAt, error) {
	if !strings.Contains(name, "://") {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err == nil && !st.Mode().IsRegular() {
			err = errors.New("not a regular file")
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		return localFile{f, st.Size()}, nil
	}
	if strings.HasPrefix(name, "gs://") {
		return openGCS(ctx, name)
	}
	fsys, err := filesystem.New(ctx, name)
	if err != nil {
		return nil, err
	}
	size, err := fsys.Size(ctx, name)
	if err != nil {
		fsys.Close()
		return nil, err
	}
	open := func(off int64) (io.ReadCloser, error) {
		r, err := fsys.OpenRead(ctx, name)
		if err != nil {
			return nil, err
		}
		if _, err := io.CopyN(io.Discard, r, off); err != nil {
			r.Close()
			return nil, err
		}
		return r, nil
	}
	return &streamFile{open: open, size: size, closeFS: fsys.Close}, nil
}

type localFile struct {
	*os.File
	size int64
}

func (f localFile) Size() int64 { return f.size }

func openGCS(ctx context.Context, name string) (FileAt, error) {
	bucket, object, err := gcsx.ParseObject(name)
	if err != nil {
		return nil, err
	}
	client, err := gcsClient(ctx)
	if err != nil {
		return nil, err
	}
	obj := client.Bucket(bucket).Object(object)
	attrs, err := obj.Attrs(ctx)
	if err != nil {
		return nil, err
	}
	open := func(off int64) (io.ReadCloser, error) { return obj.NewRangeReader(ctx, off, -1) }
	return &streamFile{open: open, size: attrs.Size, closeFS: func() error { return nil }}, nil
}

var (
	gcsOnce   sync.Once
	gcsShared *storage.Client
	gcsErr    error
)

// gcsClient is one Cloud Storage client per process, as Beam's gcs
// filesystem makes them (application default credentials).
func gcsClient(ctx context.Context) (*storage.Client, error) {
	gcsOnce.Do(func() { gcsShared, gcsErr = gcsx.NewClient(context.WithoutCancel(ctx), storage.ScopeReadWrite) })
	return gcsShared, gcsErr
}

// streamFile reads at offsets from a file it can only stream: a read at the
// stream's position continues it, a read a little ahead skips forward, any
// other reopens the stream at the offset.
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

// A Composer joins objects of an object store into one, server-side: Cloud
// Storage's compose takes up to 32 sources a call.
type Composer interface {
	Compose(ctx context.Context, dst string, srcs []string) error
	MaxSources() int
}

var (
	composersMu sync.Mutex
	composers   = map[string]func(context.Context) (Composer, error){"gs": newGCSComposer}
)

// RegisterComposer makes Concatenate join objects of a scheme with the
// store's own compose (gs is registered).
func RegisterComposer(scheme string, fn func(context.Context) (Composer, error)) {
	composersMu.Lock()
	defer composersMu.Unlock()
	composers[scheme] = fn
}

func composerFor(ctx context.Context, path string) (Composer, error) {
	scheme, _, ok := strings.Cut(path, "://")
	if !ok {
		return nil, nil
	}
	composersMu.Lock()
	fn := composers[scheme]
	composersMu.Unlock()
	if fn == nil {
		return nil, nil
	}
	return fn(ctx)
}

// Concatenate writes dst as the bytes of srcs in order. Where the store
// composes objects (Cloud Storage) it composes them, MaxSources at a time
// into intermediate objects (dst.compose-L-I, removed after) and those
// again, so nothing passes through this process; elsewhere it streams each
// source into dst in turn.
func Concatenate(ctx context.Context, dst string, srcs []string) error {
	if len(srcs) == 0 {
		return fmt.Errorf("%s: nothing to concatenate", dst)
	}
	c, err := composerFor(ctx, dst)
	if err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	if c != nil {
		return composeTree(ctx, c, dst, srcs)
	}
	return WriteFile(ctx, dst, func(w io.Writer) error {
		fsys, err := filesystem.New(ctx, srcs[0])
		if err != nil {
			return err
		}
		defer fsys.Close()
		for _, src := range srcs {
			r, err := fsys.OpenRead(ctx, src)
			if err != nil {
				return fmt.Errorf("%s: %w", src, err)
			}
			_, err = io.Copy(w, r)
			r.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", src, err)
			}
		}
		return nil
	})
}

func composeTree(ctx context.Context, c Composer, dst string, srcs []string) error {
	most := max(2, c.MaxSources())
	var temps []string
	defer func() {
		for _, t := range temps {
			Remove(ctx, t)
		}
	}()
	for level := 0; len(srcs) > most; level++ {
		var next []string
		for i := 0; i < len(srcs); i += most {
			group := srcs[i:min(i+most, len(srcs))]
			if len(group) == 1 {
				next = append(next, group[0])
				continue
			}
			t := fmt.Sprintf("%s.compose-%d-%d", dst, level, i/most)
			if err := c.Compose(ctx, t, group); err != nil {
				return fmt.Errorf("%s: compose: %w", t, err)
			}
			temps = append(temps, t)
			next = append(next, t)
		}
		srcs = next
	}
	if err := c.Compose(ctx, dst, srcs); err != nil {
		return fmt.Errorf("%s: compose: %w", dst, err)
	}
	return nil
}

type gcsComposer struct{ client *storage.Client }

func newGCSComposer(ctx context.Context) (Composer, error) {
	client, err := gcsClient(ctx)
	if err != nil {
		return nil, err
	}
	return gcsComposer{client}, nil
}

func (g gcsComposer) MaxSources() int { return 32 }

func (g gcsComposer) Compose(ctx context.Context, dst string, srcs []string) error {
	bucket, object, err := gcsx.ParseObject(dst)
	if err != nil {
		return err
	}
	var objs []*storage.ObjectHandle
	for _, s := range srcs {
		b, o, err := gcsx.ParseObject(s)
		if err != nil {
			return err
		}
		if b != bucket {
			return fmt.Errorf("%s: compose joins objects of one bucket (%s)", s, bucket)
		}
		objs = append(objs, g.client.Bucket(b).Object(o))
	}
	_, err = g.client.Bucket(bucket).Object(object).ComposerFrom(objs...).Run(ctx)
	return err
}

// Remove removes path (local or through Beam's filesystems); a path that
// does not exist is not an error.
func Remove(ctx context.Context, path string) error {
	if !strings.Contains(path, "://") {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	fsys, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fsys.Close()
	rm, ok := fsys.(filesystem.Remover)
	if !ok {
		return fmt.Errorf("%s: the filesystem cannot remove files", path)
	}
	if err := rm.Remove(ctx, path); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, storage.ErrObjectNotExist) {
		return err
	}
	return nil
}

// Rename moves src to dst (on one filesystem): atomic for local files, a
// copy and a removal on object stores.
func Rename(ctx context.Context, src, dst string) error {
	if !strings.Contains(src, "://") {
		return os.Rename(src, dst)
	}
	fsys, err := filesystem.New(ctx, src)
	if err != nil {
		return err
	}
	defer fsys.Close()
	if rn, ok := fsys.(filesystem.Renamer); ok {
		return rn.Rename(ctx, src, dst)
	}
	return fmt.Errorf("%s: the filesystem cannot rename files", src)
}

// ReadJSON decodes the JSON file at path (local or through Beam's
// filesystems) into v.
func ReadJSON(ctx context.Context, path string, v any) error {
	fsys, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fsys.Close()
	r, err := fsys.OpenRead(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer r.Close()
	if err := json.NewDecoder(r).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ListMatching returns the files of dir whose names match glob (a pattern
// of one path element), sorted.
func ListMatching(ctx context.Context, dir, glob string) ([]string, error) {
	names, err := List(ctx, Join(dir, glob))
	sort.Strings(names)
	return names, err
}
