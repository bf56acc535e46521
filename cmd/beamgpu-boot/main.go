//go:build linux

// Command beamgpu-boot starts a beamgpu worker: the entrypoint of the worker
// image (the root Dockerfile) and the command of every PROCESS environment of
// a local rehearsal of a Dataflow worker (the launcher's --rehearse flag,
// make rehearse). Both run it the same way, so the rehearsal starts workers as
// the image does:
//
//  1. It applies the worker's environment: worker.env (containers/worker.env,
//     the one source of the image's variables and paths) from
//     $BEAMGPU_WORKER_ENV, else from ../worker.env beside its own directory
//     (/opt/beamgpu/worker.env in the image). Values may name ${VARIABLES};
//     BEAMGPU_ROOT, "" in the image, puts every path of the image under the
//     rehearsal's directory.
//  2. It repairs the --id that prism gives a PROCESS environment's command:
//     prism passes --id='ID' with literal quotes (see fixID), which Beam's
//     boot loader sends on as the worker id, so that the runner knows no such
//     worker and the boot loader fails.
//  3. In a rehearsal (BEAMGPU_ROOT set) it gives each worker directories of
//     its own, as each container has its own filesystem: a semi-persistent
//     directory under ROOT/tmp (unless --semi_persist_dir is given; the
//     workers of one machine would otherwise retrieve their staged files
//     into the same /tmp/staged) and a working directory under ROOT/work
//     (the boot loader writes pipeline_options.json into its working
//     directory).
//  4. It starts Beam's Go boot loader ($BEAM_BOOT, /opt/apache/beam/boot in
//     the image) with the arguments it was given: in the image it becomes the
//     boot loader (exec). Where $BEAMGPU_WORKER_REPORT names a directory (the
//     rehearsal's launcher sets it), it runs the boot loader as its child
//     instead, and when the boot loader fails writes a report there (the
//     environment, the worker id, the exit status and the end of the boot
//     loader's stderr) that the launcher turns into the job's error: prism
//     itself would wait for the worker forever.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The variables beamgpu-boot reads.
const (
	envFile        = "BEAMGPU_WORKER_ENV"    // the worker.env to apply
	envRoot        = "BEAMGPU_ROOT"          // the image's paths under this directory ("" in the image)
	envBoot        = "BEAM_BOOT"             // Beam's boot loader (set by worker.env)
	envReport      = "BEAMGPU_WORKER_REPORT" // a directory for failure reports (rehearsal)
	envEnvironment = "BEAMGPU_ENVIRONMENT"   // the worker's environment id, for the report
)

// Report is what beamgpu-boot writes into $BEAMGPU_WORKER_REPORT when the
// boot loader fails; runtime/launch reads it (the same fields).
type Report struct {
	Environment string  `json:"environment"`
	WorkerID    string  `json:"worker_id"`
	Boot        string  `json:"boot"`
	Status      string  `json:"status"`
	Seconds     float64 `json:"seconds"`
	Stderr      string  `json:"stderr"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "beamgpu-boot: %v\n", err)
		report(Report{Environment: os.Getenv(envEnvironment), WorkerID: workerID(fixID(args)), Boot: os.Getenv(envBoot), Status: "not started", Stderr: err.Error()})
		return 1
	}
	path := os.Getenv(envFile)
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return fail(fmt.Errorf("finding worker.env: %w", err))
		}
		path = filepath.Join(filepath.Dir(filepath.Dir(exe)), "worker.env")
	}
	vars, err := readEnv(path, os.LookupEnv)
	if err != nil {
		return fail(err)
	}
	for _, kv := range vars {
		os.Setenv(kv[0], kv[1])
	}
	args = fixID(args)
	if root := os.Getenv(envRoot); root != "" {
		// A rehearsal: the worker gets directories of its own under ROOT, as
		// a container has its own filesystem: ROOT/tmp/NAME, its
		// semi-persistent directory (the boot loader retrieves the staged
		// files into it), and ROOT/work/NAME, its working directory, since
		// the boot loader writes pipeline_options.json into its working
		// directory (Beam's sdks/go/container/tools/pipeline_options.go),
		// which would otherwise be the launcher's.
		name := workerDirName(workerID(args))
		if !hasFlag(args, "semi_persist_dir") {
			args = append(args, "--semi_persist_dir="+filepath.Join(root, "tmp", name))
		}
		work := filepath.Join(root, "work", name)
		if err := os.MkdirAll(work, 0o755); err != nil {
			return fail(fmt.Errorf("the worker's working directory: %w", err))
		}
		if err := os.Chdir(work); err != nil {
			return fail(fmt.Errorf("the worker's working directory: %w", err))
		}
	}
	boot := os.Getenv(envBoot)
	if boot == "" {
		return fail(fmt.Errorf("%s does not set %s (the boot loader's path)", path, envBoot))
	}
	if fi, err := os.Stat(boot); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		if err == nil {
			err = errors.New("not an executable file")
		}
		return fail(fmt.Errorf("the boot loader %s=%s (from %s): %v", envBoot, boot, path, err))
	}
	if os.Getenv(envReport) == "" {
		err := syscall.Exec(boot, append([]string{boot}, args...), os.Environ())
		return fail(fmt.Errorf("starting the boot loader %s: %w", boot, err))
	}
	return supervise(boot, args, stderr)
}

// supervise runs the boot loader as a child that dies with this process, and
// reports its failure.
func supervise(boot string, args []string, stderr io.Writer) int {
	var tail tailBuffer
	cmd := exec.Command(boot, args...)
	// The lines a rehearsal's worker prints that are harmless are left out
	// of what reaches the terminal (rehearsalNoise); the report's tail keeps
	// everything.
	out, errOut := &noiseFilter{w: os.Stdout}, &noiseFilter{w: stderr}
	defer out.Flush()
	defer errOut.Flush()
	cmd.Stdout = out
	cmd.Stderr = io.MultiWriter(errOut, &tail)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Signals are caught before the child starts: one that comes while it
	// starts is forwarded to it, not the default death of this process.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		signal.Stop(sigs)
		report(Report{Environment: os.Getenv(envEnvironment), WorkerID: workerID(args), Boot: boot, Status: "not started", Stderr: err.Error()})
		fmt.Fprintf(stderr, "beamgpu-boot: starting the boot loader %s: %v\n", boot, err)
		return 1
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	signal.Stop(sigs)
	if err == nil {
		return 0
	}
	report(Report{Environment: os.Getenv(envEnvironment), WorkerID: workerID(args), Boot: boot,
		Status: err.Error(), Seconds: time.Since(start).Seconds(), Stderr: tail.String()})
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() > 0 {
		return exit.ExitCode()
	}
	return 1
}

// noiseFilter passes lines on to w, less those that a rehearsal's worker
// prints on every run and that are harmless there:
//
//   - "Error Setting Rlimit  operation not permitted", printed by the worker
//     binary (Beam's harness, core/runtime/harness/init/init.go), which
//     sets its open-file limit to 90% of the machine's memory size in
//     bytes (syscallx.SetProcessMemoryCeiling sets RLIMIT_NOFILE). Raising
//     a hard limit needs privileges a worker container has and a process
//     of the launching user does not; the worker goes on with the limits it
//     inherited, which a rehearsal's few files stay far below. Any other
//     error of that call is passed on.
//   - Beam's boot loader's "Provision info:" line and the line after it
//     (sdks/go/container/boot.go): a dump of everything prism's provision
//     service gave the worker, every pipeline option included, once per
//     worker, on one line of a few kilobytes. On Dataflow it goes to the
//     worker's log; here it would fill the terminal, and print any secret
//     option. A boot loader that fails still reports it (the report's tail
//     is not filtered).
//
// Everything else, real errors included, passes unchanged.
type noiseFilter struct {
	w       io.Writer
	line    []byte
	skipped bool // the line being received is left out
	dump    bool // the next line is the provision dump
}

// maxNoiseLine bounds the part of a line kept while waiting for its end: a
// longer one is passed on (or left out) in pieces.
const maxNoiseLine = 64 << 10

func (f *noiseFilter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			f.line = append(f.line, p...)
			if len(f.line) > maxNoiseLine {
				f.emit(false)
			}
			break
		}
		f.line = append(f.line, p[:i+1]...)
		p = p[i+1:]
		f.emit(true)
	}
	return n, nil
}

// emit decides on the line received so far (whole: it ends with a newline)
// and passes it on unless it is noise.
func (f *noiseFilter) emit(whole bool) {
	if !f.skipped {
		f.skipped = f.noise()
	}
	if !f.skipped {
		f.w.Write(f.line)
	}
	f.line = f.line[:0]
	if whole {
		f.skipped = false
	}
}

// noise reports whether the line starting in f.line is left out.
func (f *noiseFilter) noise() bool {
	line := strings.TrimRight(string(f.line), "\n")
	switch {
	case f.dump:
		f.dump = false
		return true
	case strings.HasPrefix(line, "Error Setting Rlimit") && strings.HasSuffix(line, "operation not permitted"):
		return true
	case strings.HasSuffix(line, "Provision info:"):
		f.dump = true
		return true
	}
	return false
}

// Flush passes on a last line that has no newline.
func (f *noiseFilter) Flush() {
	if len(f.line) > 0 {
		f.emit(true)
	}
}

// report writes r into $BEAMGPU_WORKER_REPORT, if set, whole or not at all.
func report(r Report) {
	dir := os.Getenv(envReport)
	if dir == "" {
		return
	}
	data, err := json.Marshal(r)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".report-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return
	}
	os.Rename(tmp.Name(), filepath.Join(dir, fmt.Sprintf("worker-%d.json", os.Getpid())))
}

// readEnv reads a worker.env: KEY=VALUE lines, '#' comments, ${NAME} in a
// value replaced by the value so far (earlier lines first, then lookup).
func readEnv(path string, lookup func(string) (string, bool)) ([][2]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the worker's environment: %w", err)
	}
	defer f.Close()
	set := map[string]string{}
	var out [][2]string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t$") {
			return nil, fmt.Errorf("%s:%d: %q is not KEY=VALUE", path, n, line)
		}
		v = os.Expand(v, func(name string) string {
			if s, ok := set[name]; ok {
				return s
			}
			s, _ := lookup(name)
			return s
		})
		set[k] = v
		out = append(out, [2]string{k, v})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// fixID removes the literal quotes around the value of --id that prism gives
// a PROCESS environment's command. Beam v2.77.0's prism,
// sdks/go/pkg/beam/runners/prism/internal/environments.go line 318
// (processEnvironment), starts the command with
//
//	exec.CommandContext(ctx, pp.GetCommand(), "--id='"+wk.ID+"'", ...)
//
// as if a shell were to remove the quotes, but no shell runs: the boot
// loader receives the id with the quotes, and prism's provision service,
// which knows the worker by its id, then answers for no worker, so the boot
// loader exits. Prism also skips its one-minute connection check for a
// worker that has stopped (execute.go, RunPipeline), so the job then waits
// forever. Its DOCKER environments pass --id=ID without quotes (line 211).
func fixID(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for _, p := range []string{"--id=", "-id="} {
			if v, ok := strings.CutPrefix(a, p); ok && len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
				a = p + v[1:len(v)-1]
			}
		}
		out[i] = a
	}
	return out
}

// workerID is the value of --id in args ("" without one).
func workerID(args []string) string {
	for _, a := range args {
		for _, p := range []string{"--id=", "-id="} {
			if v, ok := strings.CutPrefix(a, p); ok {
				return v
			}
		}
	}
	return ""
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// workerDirName names one worker's directories under ROOT/tmp and ROOT/work
// (a rehearsal's): the worker's id made safe as a file name, this process's
// id and the time, so that no two workers share one.
func workerDirName(id string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, id)
	if name == "" {
		name = "worker"
	}
	return fmt.Sprintf("%s-%d-%d", name, os.Getpid(), time.Now().UnixNano())
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

const tailSize = 4 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailSize {
		t.b = append(t.b[:0], t.b[len(t.b)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
