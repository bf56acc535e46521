package jobfiles

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
)

// A run's temporary files carry its run ID in their names
// (.<name>.<run>.tmp, .<name>.<run>.<row>.part, .<name>.<run>.header.part),
// and a live run holds an exclusive lock (flock) on
// <output>/.beamgpu-run.<run>.lock for as long as it runs. The lock goes
// with the process, however it ends: temporaries whose run holds no lock
// are those of a run that was killed (kill -9, power loss), and the next
// run in the same output directory removes them (RemoveStale).

// runLockPrefix starts the name of a run's lock file.
const runLockPrefix = ".beamgpu-run."

// NewRunID returns a random run ID: 12 hex digits.
func NewRunID() string {
	var b [6]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// tempName matches the name of a run's temporary file; its group 1 is the run ID.
var tempName = regexp.MustCompile(`^\..+\.([0-9a-f]{12})\.(tmp|header\.part|[0-9]{8}\.part)$`)

// lockName matches a run's lock file; its group 1 is the run ID.
var lockName = regexp.MustCompile(`^` + regexp.QuoteMeta(runLockPrefix) + `([0-9a-f]{12})\.lock$`)

// TempRun returns the run ID of a temporary file's name, or "".
func TempRun(name string) string {
	if m := tempName.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return ""
}

// LockRun marks run as live in the local directory dir (created if
// needed): it takes the run's lock and returns the function that releases
// it and removes the lock file.
func LockRun(dir, run string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, runLockPrefix+run+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: run %s is already locked: %w", path, run, err)
	}
	return func() {
		os.Remove(path)
		f.Close()
	}, nil
}

// live reports whether run holds its lock in dir.
func live(dir, run string) bool {
	f, err := os.Open(filepath.Join(dir, runLockPrefix+run+".lock"))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// RemoveStale removes, from the local directory dir and its
// subdirectories (one level: the products), the temporary files of runs
// that are not live (killed: kill -9, power loss), their lock files, and
// the subdirectories that held only such files. It returns the files
// removed, sorted. A missing dir is not an error.
func RemoveStale(dir string) ([]string, error) {
	return removeTemps(dir, func(run string) bool { return !live(dir, run) }, true)
}

// RemoveRun removes the temporary files of run from the local directory
// dir and its subdirectories, and the subdirectories left empty by that;
// it returns the files removed.
func RemoveRun(dir, run string) ([]string, error) {
	return removeTemps(dir, func(r string) bool { return r == run }, false)
}

func removeTemps(dir string, stale func(run string) bool, locks bool) ([]string, error) {
	top, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	verdict := map[string]bool{}
	isStale := func(run string) bool {
		v, ok := verdict[run]
		if !ok {
			v = stale(run)
			verdict[run] = v
		}
		return v
	}
	var removed []string
	var errs []error
	rm := func(path string) {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			return
		}
		removed = append(removed, path)
	}
	for _, e := range top {
		path := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			if run := TempRun(e.Name()); run != "" && isStale(run) {
				rm(path)
			}
			continue
		}
		sub, err := os.ReadDir(path)
		if err != nil {
			continue
		}
		n := 0
		for _, s := range sub {
			if run := TempRun(s.Name()); run != "" && !s.IsDir() && isStale(run) {
				rm(filepath.Join(path, s.Name()))
				n++
			}
		}
		if n > 0 && n == len(sub) {
			os.Remove(path) // only if empty
		}
	}
	if locks {
		for _, e := range top {
			if m := lockName.FindStringSubmatch(e.Name()); m != nil && isStale(m[1]) {
				rm(filepath.Join(dir, e.Name()))
			}
		}
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

// PrepareOutput readies the output directory dir of a run of program
// prog: in a local dir it removes the temporaries of earlier runs that
// were killed (RemoveStale; saying so through log/slog), then, local or not, the
// previous run's outputs (names, at dir's root), so that a run that fails
// leaves none that would look like its own.
func PrepareOutput(ctx context.Context, prog, dir string, names []string) error {
	if !strings.Contains(dir, "://") {
		if stale, err := RemoveStale(dir); err != nil {
			return fmt.Errorf("--output %s: removing the temporary files of earlier runs: %w", dir, err)
		} else if len(stale) > 0 {
			slog.Info("removed temporary files of earlier runs that were killed", "program", prog, "files", len(stale), "dir", dir)
		}
	}
	for _, n := range names {
		if err := Remove(ctx, Join(dir, n)); err != nil {
			return fmt.Errorf("--output %s: removing the previous run's %s: %w", dir, n, err)
		}
	}
	return nil
}
