package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/transforms/raster"
)

// store is where a run writes each scene's files, and how.
//
// Every file of a scene is first written under a temporary name in the
// scene's directory, .<name>.<run ID>.tmp, and renamed to its name only once
// all of them are written: a scene that fails leaves none of its files (its
// temporaries are removed), and a scene that succeeds has all of them.
//
// The array files (.npy) are written as tiles arrive, never assembled in
// memory:
//   - locally, each tile's rows are written at their offsets into a file of
//     known shape (a float32 .npy is a header then the rows);
//   - on object stores (gs://, any URL), where an object cannot be written
//     at an offset, tiles are full-width row strips (SceneRef.RowStrips),
//     each written as an object .<name>.<run ID>.<row>.part, and the parts
//     are joined in row order after the last one: with the store's compose
//     where it has one (Cloud Storage, 32 objects a call, in a tree for
//     more), else by streaming them into the file in turn (jobfiles.Concatenate).
type store struct {
	Output string
	RunID  string
}

// objects says whether the output is an object store (a URL).
func (st store) objects() bool { return strings.Contains(st.Output, "://") }

func (st store) final(scene, name string) string { return jobfiles.Join(st.Output, scene, name) }

func (st store) temp(scene, name string) string {
	return jobfiles.Join(st.Output, scene, "."+name+"."+st.RunID+".tmp")
}

func (st store) part(scene, name string, row int) string {
	return jobfiles.Join(st.Output, scene, fmt.Sprintf(".%s.%s.%08d.part", name, st.RunID, row))
}

func (st store) headerPart(scene, name string) string {
	return jobfiles.Join(st.Output, scene, fmt.Sprintf(".%s.%s.header.part", name, st.RunID))
}

// npyHeader is the header of a float32 .npy array of h rows of w, byte for
// byte as github.com/sbinet/npyio writes it (format 2.0).
func npyHeader(h, w int) []byte {
	dict := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", h, w)
	const fixed = 6 + 6 // magic, version, 4-byte length
	dict += strings.Repeat(" ", (fixed+len(dict)+1)%16) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x02\x00")
	binary.Write(&b, binary.LittleEndian, uint32(len(dict)))
	b.WriteString(dict)
	return b.Bytes()
}

// putFloats encodes v as little-endian float32 into dst.
func putFloats(dst []byte, v []float32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
	}
}

// writeTile writes each plane of t into its array file. Local files are
// written a plane per goroutine (each a pwrite per row): prism gives a
// scene's tiles to one bundle, and row by row on one core this was a
// quarter of a full-size scene's wall time on 16 cores.
func (st store) writeTile(ctx context.Context, t raster.Tile) error {
	for i, plane := range t.Names {
		if len(t.Data[i]) != t.Area() {
			return fmt.Errorf("%s: plane %s has %d pixels, want %d", t.ID(), plane, len(t.Data[i]), t.Area())
		}
	}
	if !st.objects() {
		return parallel.DoErr(len(t.Names), len(t.Names), func(i int) error {
			return writeAt(st.temp(t.Scene, planeFile(t.Names[i])), t, t.Data[i])
		})
	}
	for i, plane := range t.Names {
		name := planeFile(plane)
		if t.X != 0 || t.W != t.SceneW {
			return fmt.Errorf("%s: an object store is written in full-width row strips", t.ID())
		}
		buf := make([]byte, 4*t.Area())
		putFloats(buf, t.Data[i])
		if err := jobfiles.WriteFile(ctx, st.RunID, st.part(t.Scene, name, t.Y), func(w io.Writer) error { _, err := w.Write(buf); return err }); err != nil {
			return err
		}
	}
	return nil
}

// writeAt writes the rows of one plane of t at their offsets in a local
// .npy file of the scene's shape (creating it; the first tile writes the
// header).
func writeAt(path string, t raster.Tile, plane []float32) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("%s: cannot create: %w", path, err)
	}
	hdr := npyHeader(t.SceneH, t.SceneW)
	if t.X == 0 && t.Y == 0 {
		_, err = f.WriteAt(hdr, 0)
	}
	row := make([]byte, 4*t.W)
	for y := 0; y < t.H && err == nil; y++ {
		putFloats(row, plane[y*t.W:(y+1)*t.W])
		_, err = f.WriteAt(row, int64(len(hdr))+4*(int64(t.Y+y)*int64(t.SceneW)+int64(t.X)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// joinPlane makes the temporary array file of a plane whole. On an object
// store it joins the header and the row strips (at rows) in order; locally
// the tiles were written in place, and it checks the file's size.
func (st store) joinPlane(ctx context.Context, scene, name string, w, h int, rows []int) error {
	path := st.temp(scene, name)
	hdr := npyHeader(h, w)
	want := int64(len(hdr)) + 4*int64(w)*int64(h)
	if !st.objects() {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if fi.Size() != want {
			return fmt.Errorf("%s: %d bytes, want %d: tiles are missing", path, fi.Size(), want)
		}
		return nil
	}
	hp := st.headerPart(scene, name)
	if err := jobfiles.WriteFile(ctx, st.RunID, hp, func(w io.Writer) error { _, err := w.Write(hdr); return err }); err != nil {
		return err
	}
	srcs := []string{hp}
	for _, y := range rows {
		srcs = append(srcs, st.part(scene, name, y))
	}
	if err := jobfiles.Concatenate(ctx, st.RunID, path, srcs); err != nil {
		return err
	}
	for _, s := range srcs {
		if err := jobfiles.Remove(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// planeRows reads a plane's rows in order from its temporary array file.
type planeRows struct {
	rc  io.ReadCloser
	r   *bufio.Reader
	w   int
	raw []byte
}

func (st store) openPlane(ctx context.Context, scene, name string, w, h int) (*planeRows, error) {
	path := st.temp(scene, name)
	var rc io.ReadCloser
	if st.objects() {
		fsys, err := filesystem.New(ctx, path)
		if err != nil {
			return nil, err
		}
		defer fsys.Close()
		if rc, err = fsys.OpenRead(ctx, path); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		rc = f
	}
	r := bufio.NewReaderSize(rc, 1<<20)
	hdr := npyHeader(h, w)
	got := make([]byte, len(hdr))
	if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, hdr) {
		rc.Close()
		return nil, fmt.Errorf("%s: not the array header of a %dx%d plane", path, w, h)
	}
	return &planeRows{rc: rc, r: r, w: w}, nil
}

// next reads the next len(dst)/w rows into dst.
func (p *planeRows) next(dst []float32) error {
	if cap(p.raw) < 4*len(dst) {
		p.raw = make([]byte, 4*len(dst))
	}
	raw := p.raw[:4*len(dst)]
	if _, err := io.ReadFull(p.r, raw); err != nil {
		return err
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return nil
}

func (p *planeRows) Close() error { return p.rc.Close() }

// publish renames the scene's temporaries of names to their names. If a
// rename fails, the files already renamed are removed again.
func (st store) publish(ctx context.Context, scene string, names []string) error {
	for i, name := range names {
		if err := jobfiles.Rename(ctx, st.temp(scene, name), st.final(scene, name)); err != nil {
			for _, done := range names[:i] {
				jobfiles.Remove(ctx, st.final(scene, done))
			}
			return fmt.Errorf("%s: %w", st.final(scene, name), err)
		}
	}
	return nil
}

// cleanup removes every temporary and part of this run in the scene's
// directory, its files (sceneOutputs) of an earlier run, and the directory
// if it is then empty (locally).
func (st store) cleanup(ctx context.Context, scene string) error {
	dir := jobfiles.Join(st.Output, scene)
	names, err := jobfiles.ListMatching(ctx, dir, ".*."+st.RunID+".*")
	if err != nil {
		return err
	}
	for _, n := range sceneOutputs {
		names = append(names, st.final(scene, n))
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, jobfiles.Remove(ctx, n))
	}
	if !st.objects() {
		os.Remove(dir) // only if empty
	}
	return errors.Join(errs...)
}

// publishedScenes are the scenes each run published, by run ID (in this
// process: what an interrupted run reports as finished).
var publishedScenes sync.Map // run ID -> *sceneList

type sceneList struct {
	mu     sync.Mutex
	scenes []string
}

func addPublished(run, scene string) {
	l, _ := publishedScenes.LoadOrStore(run, &sceneList{})
	sl := l.(*sceneList)
	sl.mu.Lock()
	sl.scenes = append(sl.scenes, scene)
	sl.mu.Unlock()
}

func published(run string) []string {
	l, ok := publishedScenes.Load(run)
	if !ok {
		return nil
	}
	sl := l.(*sceneList)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return append([]string(nil), sl.scenes...)
}
