package job

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
)

// Main is the main of a pipeline program: it registers the flags of
// package job (unless p.Flags is set), parses the command line, initialises
// Beam (on a worker, Beam's harness takes over here and never returns),
// runs p (RunMain), prints an error to stderr prefixed by p.Name, and exits
// with RunMain's status. --help lists p's own flags and those of package
// job; --help_beam lists every flag, Beam's included.
func Main(p Pipeline) {
	if p.Flags == nil {
		p.Flags = new(Flags)
		p.Flags.Register(flag.CommandLine)
	}
	flag.Usage = func() { usage(flag.CommandLine.Output(), p) }
	for _, a := range os.Args[1:] {
		if a == "--help_beam" || a == "-help_beam" {
			flag.CommandLine.SetOutput(os.Stdout)
			flag.PrintDefaults()
			os.Exit(0)
		}
	}
	flag.Parse()
	if err := repeatedFlags(os.Args[1:], flag.CommandLine, p.OwnFlags); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", p.Name, err)
		os.Exit(2)
	}
	beam.Init()
	p.useLogger()
	// SIGINT or SIGTERM stops the run here: its cleanups run (they stop
	// its writes and remove its temporary files), the executors this process started are stopped,
	// and the process exits with 128 + the signal's number. The runner is
	// not cancelled but left behind: prism, cancelled while it starts its
	// workers, panics.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var stopping atomic.Bool
	start := time.Now()
	go func() {
		sig := <-sigs
		stopping.Store(true)
		status := 128 + int(sig.(syscall.Signal))
		fmt.Fprintf(os.Stderr, "%s: %s: stopping the run\n", p.Name, signalName(sig))
		// A second signal, or cleanups that do not end, end the process.
		go func() {
			select {
			case <-sigs:
			case <-time.After(30 * time.Second):
			}
			fmt.Fprintf(os.Stderr, "%s: stopped before its cleanups were done\n", p.Name)
			client.ShutdownShared()
			os.Exit(status)
		}()
		interruptRuns()
		client.ShutdownShared()
		// What the cleanups removed, they say themselves (a pipeline's
		// output cleanup counts the temporaries it removed and names any
		// it could not): this line claims only what Main did.
		fmt.Fprintf(os.Stderr, "%s: interrupted by %s after %s: the run did not finish; its cleanups ran and its executors were stopped\n",
			p.Name, signalName(sig), time.Since(start).Round(time.Millisecond))
		os.Exit(status)
	}()
	code, err := RunMain(context.Background(), p, os.Stdout)
	if stopping.Load() {
		select {} // the signal's goroutine ends the process
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", p.Name, err)
	}
	// The executors this process started stop with it (one that was
	// stopped, SIGSTOP, would not notice its parent's exit).
	client.ShutdownShared()
	os.Exit(code)
}

// useLogger makes p.Logger, if set, the default logger: after beam.Init,
// which installs Beam's.
func (p Pipeline) useLogger() {
	if p.Logger != nil {
		slog.SetDefault(p.Logger)
	}
}

// signalName is SIGINT or SIGTERM.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// repeatedFlags returns an error naming a flag of names given more than
// once in args (flags of fs; parsing stops where fs's does): the flag
// package keeps the last value silently, and --input=a --input=b would run
// on b alone.
func repeatedFlags(args []string, fs *flag.FlagSet, names []string) error {
	own := map[string]bool{}
	for _, n := range names {
		own[n] = true
	}
	seen := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			return nil
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		name, val, hasVal := strings.Cut(name, "=")
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if !hasVal {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
				if i+1 < len(args) {
					i++
					val = args[i]
				}
			}
		}
		if !own[name] {
			continue
		}
		if prev, ok := seen[name]; ok {
			return fmt.Errorf("--%s given twice (%q and %q): give it once", name, prev, val)
		}
		seen[name] = val
	}
	return nil
}

// RunMain runs p with the flags already parsed, prints its summary to w and
// returns the exit status and the error that explains it: 2 with the flags
// or the configuration wrong (the launch flags, a local path for remote
// workers, the backend selection, Build's error), nothing run; 1 when the
// pipeline or p.Report failed; else 0.
func RunMain(ctx context.Context, p Pipeline, w io.Writer) (int, error) {
	f := p.flags()
	// The launch configuration (runner, Dataflow GPU rules) is checked
	// before anything is read or built.
	if err := f.Launch.Validate(); err != nil {
		return 2, err
	}
	if p.WorkerPaths != nil {
		for _, path := range p.WorkerPaths() {
			if err := f.Launch.WorkerPath(path.Flag, path.Path); err != nil {
				return 2, err
			}
		}
	}
	sel, err := Selector(&f.Backend, &f.Launch, p.steps()...)
	if err != nil {
		return 2, err
	}
	if _, err := Execute(ctx, p, sel, w); err != nil {
		var be *buildError
		if errors.As(err, &be) {
			return 2, be.err
		}
		return 1, err
	}
	return 0, nil
}

func (p Pipeline) flags() *Flags {
	if p.Flags == nil {
		return &Flags{}
	}
	return p.Flags
}

// usage writes --help: p's Usage, its own flags, then those of package job.
func usage(w io.Writer, p Pipeline) {
	if p.Usage != nil {
		p.Usage(w)
	} else {
		fmt.Fprintf(w, "Usage: %s [flags] [Beam flags]\n", p.Name)
	}
	fmt.Fprintf(w, "\nFlags:\n")
	seen := map[string]bool{}
	for _, name := range append(append([]string{}, p.OwnFlags...), flagNames...) {
		f := flag.Lookup(name)
		if f == nil || seen[name] {
			continue
		}
		seen[name] = true
		fmt.Fprintf(w, "  --%s (default %q)\n      %s\n", f.Name, f.DefValue, f.Usage)
	}
	fmt.Fprintf(w, "\nBeam's own flags (--runner, --endpoint, --job_name, ...) are accepted too; '%s --help_beam' lists them.\n", p.Name)
}
