package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// stepCounts are one step's metrics, summed over the transforms that ran it.
type stepCounts struct {
	Step                            string
	Impl                            backend.Kind
	Batches, Items, Bytes, Failures int64
	KernelNS                        int64
}

// summary is the end-of-run report.
type summary struct {
	Steps            []stepCounts
	In, Done, Failed int
	Elapsed          time.Duration
	Output           string
}

func summarize(res beam.PipelineResult, report backend.Report, cfg Config, elapsed time.Duration) (summary, error) {
	s := summary{In: len(cfg.Scenes), Elapsed: elapsed, Output: cfg.Output}
	if res == nil {
		return s, fmt.Errorf("the runner returned no metrics")
	}
	byStep := map[string]*stepCounts{}
	for _, d := range report.Decisions {
		byStep[d.Step] = &stepCounts{Step: d.Step, Impl: d.Impl}
		s.Steps = append(s.Steps, stepCounts{})
	}
	m := res.Metrics().AllMetrics()
	for _, c := range m.Counters() {
		if c.Namespace() != step.Namespace {
			continue
		}
		switch c.Name() {
		case "scenes_done":
			s.Done += int(c.Result())
			continue
		case "scenes_failed":
			s.Failed += int(c.Result())
			continue
		}
		name, metric, ok := strings.Cut(c.Name(), ".")
		sc := byStep[name]
		if !ok || sc == nil {
			continue
		}
		switch metric {
		case step.MetricBatches:
			sc.Batches += c.Result()
		case step.MetricItems:
			sc.Items += c.Result()
		case step.MetricBytes:
			sc.Bytes += c.Result()
		case step.MetricFailures:
			sc.Failures += c.Result()
		}
	}
	for _, d := range m.Distributions() {
		name, metric, ok := strings.Cut(d.Name(), ".")
		if sc := byStep[name]; d.Namespace() == step.Namespace && ok && sc != nil && metric == step.MetricKernelNS {
			sc.KernelNS += d.Result().Sum
		}
	}
	for i, d := range report.Decisions {
		s.Steps[i] = *byStep[d.Step]
	}
	return s, nil
}

// Print writes the one-screen summary.
func (s summary) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\timpl\tbatches\tpixels\tMB in\tkernel s\tMpixel/s\tfailures\t")
	for _, st := range s.Steps {
		rate := "-"
		if st.KernelNS > 0 {
			rate = fmt.Sprintf("%.1f", float64(st.Items)/(float64(st.KernelNS)/1e9)/1e6)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%.3f\t%s\t%d\t\n", st.Step, st.Impl, st.Batches, st.Items,
			float64(st.Bytes)/1e6, float64(st.KernelNS)/1e9, rate, st.Failures)
	}
	tw.Flush()
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
