package main

import (
	"flag"
	"log/slog"
	"strings"

	"github.com/beamgpu/beamgpu/runtime/backend"
)

// A run whose steps include stand-ins (--backend=stub, or a step overridden
// to stub) computes nothing real: it says so in its summary and in
// metrics.json, and writes under stubOutput unless --output is given, so
// that its outputs never replace real ones.
const (
	defaultOutput = "out/fashion"
	stubOutput    = "out/stub/fashion"
)

// outputDir is --output, or stubOutput for a run with stand-ins when
// --output was not given.
func outputDir() string {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "output" })
	stub := flags.Backend.Backend == string(backend.Stub) || strings.Contains(flags.Backend.Overrides, "="+string(backend.Stub))
	if !given && *output == defaultOutput && stub {
		slog.Info("fashion: stub run (stand-ins, no results): writing to " + stubOutput + " (--output to choose)")
		return stubOutput
	}
	return *output
}
