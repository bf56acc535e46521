package executor

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
)

// Exit statuses.
const (
	exitOK       = 0
	exitFailed   = 1 // selftest failed, or serve failed
	exitUsage    = 2
	exitFatal    = 3 // an op failed fatally: restart the executor
	exitNoDevice = 4 // selftest: no usable device
)

const usage = `beamgpu-executor runs beamgpu's GPU ops for the pipeline workers.

Usage:
  beamgpu-executor serve --socket=PATH [--max_concurrent=N] [--memory_budget=BYTES]
      serve the executor protocol on the Unix socket PATH (the worker starts this)
  beamgpu-executor selftest
      print the device and run every op on a tiny input; the exit status says
      whether this executor is usable
  beamgpu-executor version
      print the protocol version, the build and the ops served
  beamgpu-executor ops
      print the ops served, one a line (the worker image's label lists them)

Run "beamgpu-executor serve --help" for the flags of serve.
`

// Build describes the executor a binary is: its kind and its device.
type Build struct {
	// Kind names the build, e.g. "reference (CPU)" or "cuda".
	Kind string
	// Device describes the device ops run on; "" means none is usable.
	Device func() string
	// Devices, where set, describe each device ops run on, by ordinal (one
	// per visible GPU), and Device is not called; none means none is
	// usable (NoDevice says why). The server places each batch on one of
	// them (server.DeviceOf).
	Devices func() []string
	// Virtual says the devices are virtual (the reference build's): the
	// test hook BEAMGPU_REFERENCE_FAIL_DEVICE applies to them.
	Virtual bool
	// NoDevice, where set, says why none is usable (called when Device
	// returns ""): the handshake carries it to the clients, whose reason for
	// falling back to the CPU then names it (a driver too old, say).
	NoDevice func() string
	// OnArena, when set, is called with each shared-memory arena the server
	// maps (the CUDA build page-locks it with the driver); the function it
	// returns is called before the arena is unmapped.
	OnArena func(data []byte) (release func(), err error)
	// Missing lists the ops the build should serve and cannot (a step
	// without a CUDA launch), each with why; selftest fails on them.
	Missing []string
}

var build Build

// Main runs the executor command line (serve, selftest, version) with the
// ops registered with package server, and returns the exit status. A
// binary's main registers its ops, then calls os.Exit(Main(b, os.Args[1:],
// os.Stdout, os.Stderr)); a test binary can do the same to serve as an
// executor (see package executortest).
func Main(b Build, args []string, stdout, stderr io.Writer) int {
	build = b
	return run(args, stdout, stderr)
}

func device() string {
	if build.Devices != nil {
		if devs := build.Devices(); len(devs) > 0 {
			return server.Summary(devs)
		}
		return ""
	}
	if build.Device == nil {
		return ""
	}
	return build.Device()
}

// devices returns the descriptions of the devices, by ordinal; nil when
// there is none.
func devices() []string {
	if build.Devices != nil {
		return build.Devices()
	}
	if d := device(); d != "" {
		return []string{d}
	}
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "selftest":
		return selftest(stdout)
	case "version":
		fmt.Fprintf(stdout, "beamgpu-executor: protocol v%d, %s build, device %q\nops: %s\n",
			protocol.Version, build.Kind, device(), strings.Join(opNames(), ", "))
		for _, m := range build.Missing {
			fmt.Fprintf(stdout, "not served: %s\n", m)
		}
		return exitOK
	case "ops":
		for _, name := range opNames() {
			fmt.Fprintln(stdout, name)
		}
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "beamgpu-executor: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

func opNames() []string {
	var names []string
	for _, op := range server.Registered() {
		names = append(names, op.Name())
	}
	return names
}

func serve(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "Unix socket path to serve on (required; its directory is created at mode 0700, the socket is 0600)")
	maxConc := fs.Int("max_concurrent", server.DefaultMaxConcurrent, "batches run at once on each device, across connections (like spark-rapids' concurrentGpuTasks)")
	budget := fs.String("memory_budget", "0", "bytes of inputs and outputs each device holds at once, e.g. 8GiB or 500MB; a batch over it gets out-of-memory (0: unlimited)")
	withParent := fs.Bool("exit_with_parent", true, "exit when the process that started this one exits")
	grace := fs.Duration("shutdown_grace", 10*time.Second, "on SIGTERM or SIGINT, how long running batches may take to finish")
	idle := fs.Duration("idle_timeout", server.DefaultIdleTimeout, "close a connection that sends nothing for this long after its handshake while none of its batches runs (0: never)")
	only := fs.String("devices", os.Getenv(EnvDevices), "ordinals of the devices to place batches on, e.g. 0 or 0,2 (default: every device; $"+EnvDevices+"); the others are left out, as bench does to measure one device")
	poison := fs.Bool("poison_outputs", false, "fill output buffers with 0xFF (NaN) before each op writes them, to catch outputs left unwritten (for equivalence tests)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: beamgpu-executor serve --socket=PATH [flags]\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *socket == "" || fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	mem, err := parseBytes(*budget)
	if err != nil {
		fmt.Fprintf(stderr, "beamgpu-executor: --memory_budget: %v\n", err)
		return exitUsage
	}
	// The diagnostics of the executor's packages (the server's, the device
	// layer's) go through log/slog to its stderr, which the client that
	// started it passes on to its own; each line names the executor.
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, nil)).With("process", "beamgpu-executor", "pid", os.Getpid()))
	dev, why := device(), ""
	if dev == "" && build.NoDevice != nil {
		why = build.NoDevice()
	}
	idleTimeout := *idle
	if idleTimeout == 0 {
		idleTimeout = -1 // never
	}
	ops := server.Registered()
	devs := devices()
	if build.Virtual {
		k, m, fail, err := failDevice(len(devs))
		if err != nil {
			fmt.Fprintf(stderr, "beamgpu-executor: %v\n", err)
			return exitUsage
		}
		if fail {
			f := &failingDevice{k: k, m: m}
			for i, op := range ops {
				ops[i] = failingOp{Op: op, f: f}
			}
		}
	}
	if dev == "" {
		devs = nil
	}
	leftOut, err := parseOnly(*only, len(devs))
	if err != nil {
		fmt.Fprintf(stderr, "beamgpu-executor: --devices: %v\n", err)
		return exitUsage
	}
	srv, err := server.New(server.Config{Device: dev, Devices: devs, NoDevice: why, Ops: ops, MaxConcurrent: *maxConc, MemoryBudget: mem, Poison: *poison, OnArena: build.OnArena, IdleTimeout: idleTimeout, LeftOut: leftOut})
	if err != nil {
		fmt.Fprintf(stderr, "beamgpu-executor: %v\n", err)
		return exitFailed
	}
	// The socket's directory is removed on exit only if it is this
	// executor's: made here, or made for it by a client (NewSocketDir's
	// name); a directory of the user's stays, empty or not.
	dir := filepath.Dir(*socket)
	_, statErr := os.Stat(dir)
	ownDir := errors.Is(statErr, os.ErrNotExist) || strings.HasPrefix(filepath.Base(dir), protocol.SocketDirPrefix)
	// The executor's stderr is a pipe to the process that started it, which
	// may be gone when the executor logs its shutdown: a write there must
	// fail, not kill the executor (SIGPIPE) before it removes its socket.
	signal.Ignore(syscall.SIGPIPE)
	// SIGTERM is caught before the socket exists: one that comes as soon as
	// the socket appears (a client waiting for it) must not kill the
	// executor by default and leave the socket behind.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	ln, err := server.Listen(*socket)
	if err != nil {
		fmt.Fprintf(stderr, "beamgpu-executor: %v\n", err)
		return exitFailed
	}

	stop := make(chan string, 2)
	go func() { stop <- (<-sigs).String() }()
	if *withParent {
		go watchParent(stop)
	}
	go func() {
		why := <-stop
		fmt.Fprintf(stderr, "beamgpu-executor: %s: shutting down\n", why)
		g := *grace
		if strings.HasPrefix(why, "parent process") {
			g = 0 // nobody is left to read the running batches' outputs
		}
		ctx, cancel := context.WithTimeout(context.Background(), g)
		defer cancel()
		srv.Shutdown(ctx)
	}()

	err = srv.Serve(ln)
	// The listener removed the socket; the directory, if this executor's,
	// goes too if nothing else is in it.
	if ownDir {
		os.Remove(dir)
	}
	switch {
	case errors.Is(err, protocol.ErrFatal):
		fmt.Fprintf(stderr, "beamgpu-executor: exiting after a fatal error: %v\n", err)
		return exitFatal
	case err != nil:
		fmt.Fprintf(stderr, "beamgpu-executor: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// watchParent reports when the process that started the executor is gone
// (the executor has been re-parented), so an executor never outlives its
// worker.
//
// The client names itself in protocol.EnvParent: an executor whose parent
// died while it was starting (its parent is then already another process)
// stops at once instead of watching its new parent forever.
func watchParent(stop chan<- string) {
	parent := os.Getppid()
	if v, err := strconv.Atoi(os.Getenv(protocol.EnvParent)); err == nil && v > 0 {
		parent = v
	}
	if os.Getppid() != parent {
		stop <- fmt.Sprintf("parent process %d exited", parent)
		return
	}
	for range time.Tick(500 * time.Millisecond) {
		if os.Getppid() != parent {
			stop <- fmt.Sprintf("parent process %d exited", parent)
			return
		}
	}
}

// EnvDevices is the default of serve's --devices: the ordinals of the
// devices batches are placed on.
const EnvDevices = "BEAMGPU_EXECUTOR_DEVICES"

// parseOnly parses --devices ("" for all) into the ordinals left out.
func parseOnly(v string, n int) ([]int, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	use := map[int]bool{}
	for _, f := range strings.Split(v, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 0 {
			return nil, fmt.Errorf("%q: want device ordinals separated by commas, e.g. 0,2", v)
		}
		if k >= n {
			return nil, fmt.Errorf("%q: there is no device %d (%d device(s))", v, k, n)
		}
		use[k] = true
	}
	var out []int
	for k := range n {
		if !use[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// parseBytes parses a byte count: an integer with an optional unit (B, KB,
// MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of 1024).
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q: want a non-negative number of bytes", s)
	}
	return int64(v * mult), nil
}

// selftest prints the device and runs every op that can check itself, on
// every device, each named on a line of its own ("device 0: ...").
func selftest(stdout io.Writer) int {
	dev := device()
	fmt.Fprintf(stdout, "beamgpu-executor selftest: protocol v%d, %s build\ndevice: %s\n", protocol.Version, build.Kind, orNone(dev))
	devs := devices()
	if dev == "" {
		devs = nil
	}
	failed := 0
	runAll := func(ordinal int) {
		for _, op := range server.Registered() {
			st, ok := op.(server.SelfTester)
			if !ok {
				fmt.Fprintf(stdout, "  skip  %-24s (no self-test)\n", op.Name())
				continue
			}
			params, in, check := st.SelfTest()
			ctx, cancel := context.WithTimeout(server.WithDevice(context.Background(), ordinal), time.Minute)
			start := time.Now()
			out, err := server.RunLocal(ctx, op, params, in)
			cancel()
			if err == nil {
				err = check(out)
			}
			if err != nil {
				failed++
				fmt.Fprintf(stdout, "  FAIL  %-24s %v\n", op.Name(), err)
				continue
			}
			fmt.Fprintf(stdout, "  ok    %-24s %v\n", op.Name(), time.Since(start).Round(time.Microsecond))
		}
	}
	if len(devs) == 0 {
		runAll(0) // the ops' CPU side still says what works
	}
	for i, d := range devs {
		fmt.Fprintf(stdout, "device %d: %s\n", i, d)
		runAll(i)
	}
	for _, m := range build.Missing {
		failed++
		fmt.Fprintf(stdout, "  FAIL  %s\n", m)
	}
	switch {
	case dev == "":
		if build.NoDevice != nil {
			if why := build.NoDevice(); why != "" {
				fmt.Fprintf(stdout, "FAIL: no usable device: %s\n", why)
				return exitNoDevice
			}
		}
		fmt.Fprintln(stdout, "FAIL: no usable device")
		return exitNoDevice
	case failed > 0:
		fmt.Fprintf(stdout, "FAIL: %d op(s) failed\n", failed)
		return exitFailed
	}
	fmt.Fprintf(stdout, "PASS (%d device(s))\n", len(devs))
	return exitOK
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
