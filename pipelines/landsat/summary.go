package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/beamgpu/beamgpu/pipelines/internal/job"
)

// summary is the end-of-run report.
type summary struct {
	job.Metrics
	In, Done, Failed int
	Elapsed          time.Duration
	Output           string
	// Stub lists the steps that ran their stand-ins.
	Stub []string
}

// Print writes the one-screen summary.
func (s summary) Print(w io.Writer) {
	s.PrintSteps(w, "pixels")
	fmt.Fprintf(w, "scenes: %d in, %d done, %d failed (%s) in %s; outputs in %s\n",
		s.In, s.Done, s.Failed, failedFile, s.Elapsed.Round(time.Millisecond), s.Output)
	if len(s.Stub) > 0 {
		fmt.Fprintf(w, "STUB RUN: %s ran stand-ins (zeros of the real shape): the outputs are not results\n", strings.Join(s.Stub, ", "))
	}
}

// Reconcile checks that every scene that went in is either done or failed.
func (s summary) Reconcile() error {
	if s.In != s.Done+s.Failed {
		return fmt.Errorf("counts do not reconcile: %d scenes in, %d done + %d failed", s.In, s.Done, s.Failed)
	}
	return nil
}
