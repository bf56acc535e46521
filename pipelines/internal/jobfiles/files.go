package jobfiles

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
	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

func init() { files.Register("gs", gcsFiles{}) }

// gcsFiles reads Cloud Storage objects at offsets with ranged reads (a
// windowed reader's strips, without streaming through what lies between),
// and otherwise as Beam's filesystems do.
type gcsFiles struct{ stepbeam.Filesystems }

// OpenAt implements files.FS.
func (gcsFiles) OpenAt(ctx context.Context, name string) (files.File, error) {
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
	return files.StreamAt(open, attrs.Size, nil), nil
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

// Concatenate writes dst, a file of run, as the bytes of srcs in order. Where the store
// composes objects (Cloud Storage) it composes them, MaxSources at a time
// into intermediate objects (dst.compose-L-I, removed after) and those
// again, so nothing passes through this process; elsewhere it streams each
// source into dst in turn.
func Concatenate(ctx context.Context, run, dst string, srcs []string) error {
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
	return WriteFile(ctx, run, dst, func(w io.Writer) error {
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
