// Package jobfiles holds the files the project's pipelines share.
//
// It writes files through Beam's filesystems (local, gs://) and
// failed.jsonl, checks an output directory before anything runs, extracts
// embedded default data, reads files at offsets, and joins the row strips
// of an object-store output with Cloud Storage's compose.
package jobfiles

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"   // gs:// paths (Dataflow)
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // local paths
	"github.com/beamgpu/beamgpu/transforms/step"
)

// FailedFile is the name of the failures file at the root of an output directory.
const FailedFile = "failed.jsonl"

// Join joins a directory (local or a URL such as gs://b/x) and names.
func Join(dir string, names ...string) string {
	return strings.TrimSuffix(dir, "/") + "/" + strings.Join(names, "/")
}

// WriteFile writes path, a file of run, through Beam's filesystems
// (local, gs://, ...). A local file is written whole or not at all: under
// a temporary name in its directory that carries the run's ID
// (.<name>.<run>.<nonce>.tmp: RemoveRun removes it, and RemoveStale if
// the process dies), renamed into place once written. An object store's
// object appears only once its upload is complete. Once the run's writes
// are stopped (StopWrites: the run was interrupted) it writes nothing and
// returns ErrInterrupted.
func WriteFile(ctx context.Context, run, path string, write func(io.Writer) error) error {
	if !runID.MatchString(run) {
		return fmt.Errorf("%s: run ID %q: want 12 hex digits", path, run)
	}
	end, err := BeginWrite(run)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer end()
	if !strings.Contains(path, "://") {
		return writeLocal(run, path, write)
	}
	fsys, err := filesystem.New(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer fsys.Close()
	w, err := fsys.OpenWrite(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: cannot create: %w", path, err)
	}
	if err := write(w); err != nil {
		w.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeLocal is WriteFile of a local path.
func writeLocal(run, path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: cannot create: %w", path, err)
	}
	tmp := TempName(path, run)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("%s: cannot create: %w", path, err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// WriteJSON writes v as indented JSON to path, a file of run.
func WriteJSON(ctx context.Context, run, path string, v any) error {
	return WriteFile(ctx, run, path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

// WriteFailures writes failures to dir/failed.jsonl, a file of run, one
// JSON object a line, sorted by key, step and input (an empty file when
// there are none).
func WriteFailures(ctx context.Context, run, dir string, failures []step.Failure) error {
	sort.Slice(failures, func(i, j int) bool {
		a, b := failures[i], failures[j]
		return a.Key < b.Key || a.Key == b.Key && (a.Step < b.Step || a.Step == b.Step && a.Input < b.Input)
	})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, f := range failures {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return WriteFile(ctx, run, Join(dir, FailedFile), func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err })
}

// CheckWritable makes sure a local output directory exists and can be
// written (with a file of run's, removed at once); flag names the flag in
// errors. Remote directories are not checked (their errors are reported
// per file).
func CheckWritable(flag, dir, run string) error {
	if strings.Contains(dir, "://") {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--%s %s: cannot create the directory: %w", flag, dir, err)
	}
	if !runID.MatchString(run) {
		return fmt.Errorf("run ID %q: want 12 hex digits", run)
	}
	tmp := TempName(filepath.Join(dir, "write-check"), run)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("--%s %s: directory is not writable: %w", flag, dir, err)
	}
	f.Close()
	return os.Remove(tmp)
}

// Extract copies the tree root of fsys into a new temporary directory and
// returns that directory (the caller removes it).
func Extract(fsys fs.FS, root string) (string, error) {
	tmp, err := os.MkdirTemp("", "beamgpu-")
	if err != nil {
		return "", err
	}
	err = fs.WalkDir(fsys, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(tmp, strings.TrimPrefix(path, root))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		os.RemoveAll(tmp)
		return "", errors.Join(errors.New("extracting embedded data"), err)
	}
	return tmp, nil
}
