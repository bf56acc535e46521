package jobfiles

import (
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"syscall"
	"time"
)

// A run's temporary files carry its run ID in their names
// (.<name>.<run>.<nonce>.tmp, .<name>.<run>.<row>.part,
// .<name>.<run>.header.part), and a live run holds an exclusive lock
// (flock) on <output>/.beamgpu-run.<run>.lock for as long as it runs, which
// names its process (pid, start). The lock goes with the process, however
// it ends: temporaries whose run holds no lock are those of a run that was
// killed (kill -9, power loss), and the next run in the same output
// directory removes them (RemoveStale). A second run into the directory of
// a live run is refused (LockRun: a *BusyError), so that two runs never
// write, or clean, one directory at once.

// runLockPrefix starts the name of a run's lock file.
const runLockPrefix = ".beamgpu-run."

// claimName is the lock file that makes taking a run's lock and checking
// for other live runs in a directory one step: held only while LockRun
// does both, and removed after.
const claimName = runLockPrefix + "claim"

// NewRunID returns a random run ID: 12 hex digits.
func NewRunID() string {
	var b [6]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// nonce returns 8 random hex digits.
func nonce() string {
	var b [4]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TempName returns the temporary name under which a run writes path: in
// path's directory, .<name>.<run>.<nonce>.tmp (TempRun gives back run).
func TempName(path, run string) string {
	dir, name := filepath.Split(path)
	return filepath.Join(dir, "."+name+"."+run+"."+nonce()+".tmp")
}

// tempName matches the name of a run's temporary file; its group 1 is the run ID.
var tempName = regexp.MustCompile(`^\..+\.([0-9a-f]{12})\.(tmp|[0-9a-f]{8}\.tmp|header\.part|[0-9]{8}\.part)$`)

// lockName matches a run's lock file; its group 1 is the run ID.
var lockName = regexp.MustCompile(`^` + regexp.QuoteMeta(runLockPrefix) + `([0-9a-f]{12})\.lock$`)

// runID matches a run ID.
var runID = regexp.MustCompile(`^[0-9a-f]{12}$`)

// TempRun returns the run ID of a temporary file's name, or "".
func TempRun(name string) string {
	if m := tempName.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return ""
}

// LiveRun is what a run's lock file says of the run that holds it.
type LiveRun struct {
	Run     string    `json:"run"`
	PID     int       `json:"pid"`
	Program string    `json:"program"`
	Started time.Time `json:"started"`
}

// A BusyError refuses a run whose output directory is that of a live run
// (or lies in it, or holds it: the two would clean each other's files).
type BusyError struct {
	// Dir is the directory the run asked for; LockDir is where the live
	// run's lock is (Dir, its parent or a subdirectory).
	Dir, LockDir string
	Live         LiveRun
}

func (e *BusyError) Error() string {
	where := "is the output directory of a live run"
	switch {
	case e.LockDir == filepath.Dir(e.Dir):
		where = "lies in " + e.LockDir + ", the output directory of a live run"
	case e.LockDir != e.Dir:
		where = "holds " + e.LockDir + ", the output directory of a live run"
	}
	who := fmt.Sprintf("run %s", e.Live.Run)
	if e.Live.PID > 0 {
		who += fmt.Sprintf(", %s pid %d, started %s", e.Live.Program, e.Live.PID, e.Live.Started.Local().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s %s (%s): refused, two runs would write and clean the same files; wait for it to end or choose another directory", e.Dir, where, who)
}

// LockRun marks run as live in the local directory dir (created if
// needed): it takes the run's lock, writing this process's pid and the
// time into it, and returns the function that releases it and removes the
// lock file. If another run is live in dir, in its parent or in one of its
// subdirectories, it takes nothing and returns a *BusyError naming that
// run (pid, start).
func LockRun(dir, run string) (release func(), err error) {
	if !runID.MatchString(run) {
		return nil, fmt.Errorf("run ID %q: want 12 hex digits", run)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	unclaim, err := lockFile(filepath.Join(dir, claimName))
	if err != nil {
		return nil, err
	}
	defer unclaim()
	if busy := liveRunNear(dir); busy != nil {
		return nil, busy
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
	info, _ := json.Marshal(LiveRun{Run: run, PID: os.Getpid(), Program: filepath.Base(os.Args[0]), Started: time.Now().UTC()})
	if err := f.Truncate(0); err == nil {
		f.WriteAt(append(info, '\n'), 0)
	}
	return func() {
		os.Remove(path)
		f.Close()
	}, nil
}

// lockFile takes an exclusive lock on path (created if needed), waiting
// for it, and returns the function that removes the file and releases the
// lock. The file may be removed by its holder while another waits: the
// waiter then locks again the file now at path.
func lockFile(path string) (func(), error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return func() {
				os.Remove(path)
				f.Close()
			}, nil
		}
		f.Close()
	}
}

// liveRunNear returns the error naming a run that is live in dir, in its
// parent or in one of its subdirectories, or nil.
func liveRunNear(dir string) *BusyError {
	check := func(d string) *BusyError {
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil
		}
		for _, e := range entries {
			if m := lockName.FindStringSubmatch(e.Name()); m != nil && live(d, m[1]) {
				return &BusyError{Dir: dir, LockDir: d, Live: readLiveRun(d, m[1])}
			}
		}
		return nil
	}
	if b := check(dir); b != nil {
		return b
	}
	if abs, err := filepath.Abs(dir); err == nil && filepath.Dir(abs) != abs {
		if b := check(filepath.Dir(abs)); b != nil {
			b.LockDir = filepath.Dir(dir)
			return b
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			if b := check(filepath.Join(dir, e.Name())); b != nil {
				return b
			}
		}
	}
	return nil
}

// readLiveRun reads what the lock file of run in dir says of it.
func readLiveRun(dir, run string) LiveRun {
	lr := LiveRun{Run: run}
	if b, err := os.ReadFile(filepath.Join(dir, runLockPrefix+run+".lock")); err == nil {
		json.Unmarshal(b, &lr)
	}
	lr.Run = run
	return lr
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
// the subdirectories that held only such files. A run is live if it holds
// its lock in dir or in the subdirectory of the file. It returns the files
// removed, sorted. A missing dir is not an error.
func RemoveStale(dir string) ([]string, error) {
	return removeTemps(dir, func(sub, run string) bool { return !live(dir, run) && (sub == dir || !live(sub, run)) }, true)
}

// RemoveRun removes the temporary files of run from the local directory
// dir and its subdirectories, and the subdirectories left empty by that;
// it returns the files removed.
func RemoveRun(dir, run string) ([]string, error) {
	return removeTemps(dir, func(_, r string) bool { return r == run }, false)
}

// RunTemps lists the temporary files of run left in the local directory
// dir and its subdirectories (one level).
func RunTemps(dir, run string) []string {
	var found []string
	list := func(d string) []os.DirEntry {
		entries, _ := os.ReadDir(d)
		return entries
	}
	for _, e := range list(dir) {
		path := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			if TempRun(e.Name()) == run {
				found = append(found, path)
			}
			continue
		}
		for _, s := range list(path) {
			if !s.IsDir() && TempRun(s.Name()) == run {
				found = append(found, filepath.Join(path, s.Name()))
			}
		}
	}
	sort.Strings(found)
	return found
}

func removeTemps(dir string, stale func(sub, run string) bool, locks bool) ([]string, error) {
	top, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type key struct{ sub, run string }
	verdict := map[key]bool{}
	isStale := func(sub, run string) bool {
		v, ok := verdict[key{sub, run}]
		if !ok {
			v = stale(sub, run)
			verdict[key{sub, run}] = v
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
			if run := TempRun(e.Name()); run != "" && isStale(dir, run) {
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
			if run := TempRun(s.Name()); run != "" && !s.IsDir() && isStale(path, run) {
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
			if m := lockName.FindStringSubmatch(e.Name()); m != nil && isStale(dir, m[1]) {
				rm(filepath.Join(dir, e.Name()))
			}
		}
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

// A run's writes pass through its gate (WriteFile does; a pipeline's own
// writes, such as Landsat's tiles written at offsets, call BeginWrite), so
// that an interrupted run (SIGINT, SIGTERM) can stop them before its
// temporaries are removed: a file created after the removal would be left
// behind. The writers run in this process on prism (loopback); on a remote
// runner no gate is ever stopped here.
type runGate struct {
	mu      sync.Mutex
	stopped bool
	active  int
	idle    chan struct{} // closed when active drops to 0 after stop
}

var gates sync.Map // run ID -> *runGate

func gateOf(run string) *runGate {
	g, _ := gates.LoadOrStore(run, &runGate{})
	return g.(*runGate)
}

// ErrInterrupted fails the writes of a run that was stopped (StopWrites).
var ErrInterrupted = errors.New("the run was interrupted")

// BeginWrite admits a writer of run's files and returns the function that
// ends its write, or ErrInterrupted once the run's writes are stopped.
func BeginWrite(run string) (end func(), err error) {
	g := gateOf(run)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return nil, ErrInterrupted
	}
	g.active++
	var once sync.Once
	return func() { once.Do(g.leave) }, nil
}

func (g *runGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	if g.stopped && g.active == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// StopWrites admits no more writers of run (BeginWrite, WriteFile) and
// waits up to wait for those under way to end; it reports whether they
// did.
func StopWrites(run string, wait time.Duration) bool {
	g := gateOf(run)
	g.mu.Lock()
	g.stopped = true
	if g.active == 0 {
		g.mu.Unlock()
		return true
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return true
	case <-time.After(wait):
		return false
	}
}

// forgetRun drops run's gate (a run over, not interrupted: nothing of it
// writes any more).
func forgetRun(run string) { gates.Delete(run) }

// EndRun ends run in the local directory dir: it stops the run's writes
// (waiting up to wait for those under way), removes its temporary files,
// and returns those removed and those still there (writes that did not
// end in time). interrupted keeps the run's writes stopped for good; else
// a later run of the same ID (tests) may write again.
func EndRun(dir, run string, wait time.Duration, interrupted bool) (removed, left []string) {
	StopWrites(run, wait)
	removed, _ = RemoveRun(dir, run)
	left = RunTemps(dir, run)
	if !interrupted {
		forgetRun(run)
	}
	return removed, left
}
