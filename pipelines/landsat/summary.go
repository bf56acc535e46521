package main

import (
	"fmt"
	"io"
	"time"

	"github.com/beamgpu/beamgpu/pipelines/job"
)

// summary is the end-of-run report.
type summary struct {
	job.Metrics
	In, Done, Failed int
	Elapsed          time.Duration
	Output           string
}

// Print writes the one-screen summary.
func (s summary) Print(w io.Writer) {
	s.PrintSteps(w, "pixels")
	fmt.Fprintf(w, "scenes: %d in, %d done, %d failed (%s) in %s; outputs in %s\n",
		s.In, s.Done, s.Failed, failedFile, s.Elapsed.Round(time.Millisecond), s.Output)
}

// Reconcile checks that every scene that went in is either done or failed.
func (s summary) Reconcile() error {
	if s.In != s.Done+s.Failed {
		return fmt.Errorf("counts do not reconcile: %d scenes in, %d done + %d failed", s.In, s.Done, s.Failed)
	}
	return nil
}
