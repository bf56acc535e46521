package job

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
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
	beam.Init()
	// The run's context: the place where an interrupted run will be
	// cancelled (SIGINT, SIGTERM), its cleanups run and its status set.
	ctx := context.Background()
	code, err := RunMain(ctx, p, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", p.Name, err)
	}
	os.Exit(code)
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
