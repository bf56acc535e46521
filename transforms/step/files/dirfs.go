package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Dir returns the directory dir of any filesystem (a local path, gs://...)
// as an io/fs.FS, for code that reads through io/fs (package onnx's Load:
// a model and its external data files). Its files are opened with OpenAt
// and read at offsets (they implement io.ReaderAt); a name must be a valid
// io/fs path (no "..", not absolute), and a local file's real path, after
// symbolic links, must lie inside dir's: a link that leads out is refused.
func Dir(ctx context.Context, dir string) fs.FS { return dirFS{ctx: ctx, dir: dir} }

type dirFS struct {
	ctx context.Context
	dir string
}

func (d dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	full, err := d.join(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f, err := OpenAt(d.ctx, full)
	if err != nil {
		return nil, err
	}
	return &dirFile{File: f, name: path.Base(name)}, nil
}

// join is the path of name in d; a local one must not lead out of d.
func (d dirFS) join(name string) (string, error) {
	if strings.Contains(d.dir, "://") {
		return strings.TrimSuffix(d.dir, "/") + "/" + name, nil
	}
	full := filepath.Join(d.dir, filepath.FromSlash(name))
	realDir, err := filepath.EvalSymlinks(d.dir)
	if err != nil {
		return "", err
	}
	realFull, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(realDir, realFull); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s leads outside %s (to %s)", name, d.dir, realFull)
	}
	return full, nil
}

// dirFile is a File as an fs.File: read in sequence, or at offsets.
type dirFile struct {
	File
	name string
	pos  int64
}

func (f *dirFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	if n > 0 && errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (f *dirFile) Stat() (fs.FileInfo, error) { return fileInfo{name: f.name, size: f.Size()}, nil }

type fileInfo struct {
	name string
	size int64
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o444 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }
