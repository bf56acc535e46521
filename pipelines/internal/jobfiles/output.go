package jobfiles

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/beamgpu/beamgpu/pipelines/job"
)

// An Input is what a run reads, by the flag that named it.
type Input struct {
	// Flag names the flag in errors: "input", "model", ...
	Flag string
	// Path is a file or a directory the run reads; with Glob, a pattern
	// (filepath.Match's) of the files it reads.
	Path string
	// Glob says that Path is a pattern: an output directory it matches, or
	// whose files it matches, is refused (the next run would read the
	// outputs as inputs).
	Glob bool
	// Files are the files the run reads (a glob's matches); empty: Path,
	// unless Glob.
	Files []string
}

// Output is a run's output directory: what the run writes there and what
// it reads, to check that the one cannot be the other.
type Output struct {
	// Program names the program in messages ("infer").
	Program string
	// Dir is the output directory (local, or a URL such as gs://b/x).
	Dir string
	// Run is the run's ID (NewRunID).
	Run string
	// Files are the run's own files at Dir's root: those of the previous
	// run are removed when the run starts (so that a run that fails leaves
	// none that would look like its own), and the run writes them.
	Files []string
	// Inputs are what the run reads.
	Inputs []Input
	// Finished, if set, says what an interrupted run finished, for the
	// message of its interruption ("1 of 4 scenes were finished").
	Finished func() string
}

// Check refuses, before anything is written or removed, an output
// directory that is the filesystem root (after symlinks and ".."), one
// where the run would remove or overwrite one of its inputs (a file of
// Files, a temporary or lock file RemoveStale removes; compared by
// resolved path and by file identity, os.SameFile, following symlinks),
// and one that an input glob matches, or whose files it matches.
func (o Output) Check() error {
	if strings.Contains(o.Dir, "://") {
		return o.checkRemote()
	}
	dir := resolve(o.Dir)
	if dir == string(filepath.Separator) {
		return fmt.Errorf("--output %s is the filesystem root: refused (the run would write its files, and remove those of an earlier run, there); give it a directory of its own", o.Dir)
	}
	// The files the run writes or removes, by name, and their identities
	// where they exist.
	type target struct {
		path string
		info os.FileInfo
	}
	var targets []target
	for _, f := range o.Files {
		p := filepath.Join(o.Dir, f)
		if fi, err := os.Stat(p); err == nil {
			targets = append(targets, target{p, fi})
		}
	}
	for _, in := range o.Inputs {
		if strings.Contains(in.Path, "://") {
			continue
		}
		files := in.Files
		if len(files) == 0 && !in.Glob {
			files = []string{in.Path}
		}
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil {
				continue // not there: the run's own check of its inputs says so
			}
			for _, t := range targets {
				if os.SameFile(fi, t.info) {
					return fmt.Errorf("--%s %s is %s, a file the run removes and rewrites in --output %s: refused, a run never removes or overwrites its inputs; choose another --output",
						in.Flag, f, t.path, o.Dir)
				}
			}
			name := filepath.Base(f)
			if TempRun(name) != "" || lockName.MatchString(name) {
				parent := resolve(filepath.Dir(f))
				if parent == dir || filepath.Dir(parent) == dir {
					return fmt.Errorf("--%s %s is named as a run's temporary or lock file in --output %s, which a run removes: refused, a run never removes its inputs; rename it or choose another --output",
						in.Flag, f, o.Dir)
				}
			}
			if fi.IsDir() && resolve(f) == dir {
				return fmt.Errorf("--%s %s is --output %s: refused, the run would write its files among its inputs; choose another --output", in.Flag, f, o.Dir)
			}
		}
		if in.Glob {
			if err := o.checkGlob(in, resolveGlob(in.Path), dir, filepath.Match); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRemote is Check of an object store's output: paths compared as
// strings (there are no links).
func (o Output) checkRemote() error {
	dir := strings.TrimSuffix(o.Dir, "/")
	for _, in := range o.Inputs {
		files := in.Files
		if len(files) == 0 && !in.Glob {
			files = []string{in.Path}
		}
		for _, f := range files {
			for _, n := range o.Files {
				if f == Join(dir, n) {
					return fmt.Errorf("--%s %s is a file the run removes and rewrites in --output %s: refused, a run never removes or overwrites its inputs; choose another --output", in.Flag, f, o.Dir)
				}
			}
		}
		if in.Glob {
			if err := o.checkGlob(in, in.Path, dir, path.Match); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkGlob refuses an output directory dir that glob matches, or whose
// files (the run's, their temporaries, its lock) glob matches.
func (o Output) checkGlob(in Input, glob, dir string, match func(pattern, name string) (bool, error)) error {
	if ok, _ := match(glob, dir); ok {
		return fmt.Errorf("--output %s is matched by --%s %s: the next run would read the output directory as an input; choose an --output outside the input", o.Dir, in.Flag, in.Path)
	}
	names := append([]string{}, o.Files...)
	for _, f := range o.Files {
		names = append(names, "."+f+"."+o.Run+".00000000.tmp")
	}
	if !strings.Contains(dir, "://") {
		names = append(names, runLockPrefix+o.Run+".lock")
	}
	for _, n := range names {
		if ok, _ := match(glob, dir+"/"+n); ok {
			return fmt.Errorf("--output %s: --%s %s matches %s, a file this run writes there: the next run would read its outputs as inputs; choose an --output outside the input",
				o.Dir, in.Flag, in.Path, n)
		}
	}
	return nil
}

// resolve returns the absolute form of p with its symlinks and ".."
// resolved, as far as it exists (the rest appended as it is).
func resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// resolveGlob resolves the directories of a local glob up to its first
// element with a pattern character.
func resolveGlob(glob string) string {
	abs, err := filepath.Abs(glob)
	if err != nil {
		return glob
	}
	parts := strings.Split(abs, string(filepath.Separator))
	i := 0
	for i < len(parts) && !strings.ContainsAny(parts[i], `*?[\`) {
		i++
	}
	if i == len(parts) {
		return resolve(abs)
	}
	prefix := strings.Join(parts[:i], string(filepath.Separator))
	if prefix == "" {
		prefix = string(filepath.Separator)
	}
	return filepath.Join(append([]string{resolve(prefix)}, parts[i:]...)...)
}

// Claim makes o.Dir the output directory of the run r, before anything
// of it runs: Check; then, in a local directory, CheckWritable, the run's
// lock (LockRun: a live run there refuses this one), the removal of the
// temporaries of earlier runs that were killed (RemoveStale, said on
// stderr, as the run's own report); then, local or not, of the previous run's Files. Its cleanup,
// registered with r, ends the run's writes, removes its temporaries,
// releases its lock and, if the run was interrupted, says on stderr what
// it finished and what it removed (and any temporary it could not).
// A plan (--plan_out) claims nothing.
func (o Output) Claim(ctx context.Context, r *job.Run) error {
	if r.Flags().Launch.PlanOut != "" {
		return nil
	}
	if err := o.Check(); err != nil {
		return err
	}
	if !strings.Contains(o.Dir, "://") {
		if err := CheckWritable("output", o.Dir, o.Run); err != nil {
			return err
		}
		if err := o.lock(r); err != nil {
			return err
		}
		stale, err := RemoveStale(o.Dir)
		if len(stale) > 0 {
			fmt.Fprintf(os.Stderr, "%s: removed %d temporary files of earlier runs that were killed, in %s\n", o.Program, len(stale), o.Dir)
		}
		if err != nil {
			return fmt.Errorf("--output %s: removing the temporary files of earlier runs: %w", o.Dir, err)
		}
	}
	for _, n := range o.Files {
		if err := Remove(ctx, Join(o.Dir, n)); err != nil {
			return fmt.Errorf("--output %s: removing the previous run's %s: %w", o.Dir, n, err)
		}
	}
	return nil
}

// lock takes the run's lock in o.Dir, with the cleanup that ends the run.
// The cleanup is registered before the lock is taken, and the two exclude
// each other: an interruption at any moment leaves no lock.
func (o Output) lock(r *job.Run) error {
	var mu sync.Mutex
	var release func()
	cleaned := false
	r.Cleanup(func() {
		interrupted := r.Interrupted()
		removed, left := EndRun(o.Dir, o.Run, 10*time.Second, interrupted)
		mu.Lock()
		defer mu.Unlock()
		cleaned = true
		if release != nil {
			release()
		}
		if interrupted {
			finished := ""
			if o.Finished != nil {
				finished = o.Finished() + "; "
			}
			msg := fmt.Sprintf("%s: interrupted: %s%d temporary files removed", o.Program, finished, len(removed))
			if len(left) > 0 {
				msg += fmt.Sprintf("; %d could not be removed (writes still under way): %s", len(left), strings.Join(left, ", "))
			}
			fmt.Fprintln(os.Stderr, msg)
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if cleaned {
		return errors.New("interrupted")
	}
	var err error
	if release, err = LockRun(o.Dir, o.Run); err != nil {
		var busy *BusyError
		if errors.As(err, &busy) {
			return fmt.Errorf("--output %w", err)
		}
		return fmt.Errorf("--output: %w", err)
	}
	return nil
}
