package job

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// StepCounts are one step's metrics, summed over the transforms that ran it.
type StepCounts struct {
	Step                                      string
	Impl                                      backend.Kind
	Batches, Items, Bytes, Failures, KernelNS int64
	// Fallbacks counts the batches a GPU step ran on the CPU because no
	// executor could run them (--backend=auto).
	Fallbacks int64
}

// DeviceCounts are what the GPU executors ran on one device: the explain
// report's (backend.DeviceCounts).
type DeviceCounts = backend.DeviceCounts

// Metrics is what a run's Beam metrics say: the counts of every step of the
// explain report, in its order, and every other counter of namespace
// stepbeam.Namespace by name.
type Metrics struct {
	Steps    []StepCounts
	Counters map[string]int64
	// CPUInsteadOfGPU says why steps that have a GPU op ran on the CPU
	// under --backend=auto ("" where none did): the explain report's
	// reason, such as an executor that reports no device because its
	// driver is too old.
	CPUInsteadOfGPU string
	// Devices are the GPU executors' per-device counts, by ordinal (none
	// when no batch ran on an executor).
	Devices []DeviceCounts
}

// ReadMetrics reads the step metrics of res for the steps of report.
func ReadMetrics(res beam.PipelineResult, report backend.Report) (Metrics, error) {
	if res == nil {
		return Metrics{}, fmt.Errorf("the runner returned no metrics")
	}
	m := Metrics{Counters: map[string]int64{}}
	byStep := map[string]*StepCounts{}
	byDevice := map[int]*DeviceCounts{}
	// A step with several uses (the onnx step, once per model) has a
	// decision per use and one for the step itself; its counts are the
	// step's, once, with the implementation of its first decision (the
	// pipeline's use, resolved as it was built).
	for _, d := range report.Decisions {
		if byStep[d.Step] == nil {
			byStep[d.Step] = &StepCounts{Step: d.Step, Impl: d.Impl}
		}
	}
	all := res.Metrics().AllMetrics()
	for _, c := range all.Counters() {
		if c.Namespace() != stepbeam.Namespace {
			continue
		}
		m.Counters[c.Name()] += c.Result()
		name, metric, _ := strings.Cut(c.Name(), ".")
		if dev, what, ok := deviceMetric(metric); ok {
			dc := byDevice[dev]
			if dc == nil {
				dc = &DeviceCounts{Device: dev}
				byDevice[dev] = dc
			}
			switch what {
			case stepbeam.MetricDeviceBatches:
				dc.Batches += c.Result()
			case stepbeam.MetricDeviceBytes:
				dc.Bytes += c.Result()
			case stepbeam.MetricDeviceBusyNS:
				dc.BusyNS += c.Result()
			}
			continue
		}
		sc := byStep[name]
		if sc == nil {
			continue
		}
		switch metric {
		case stepbeam.MetricBatches:
			sc.Batches += c.Result()
		case stepbeam.MetricItems:
			sc.Items += c.Result()
		case stepbeam.MetricBytes:
			sc.Bytes += c.Result()
		case stepbeam.MetricFailures:
			sc.Failures += c.Result()
		case stepbeam.MetricFallback:
			sc.Fallbacks += c.Result()
		}
	}
	for _, d := range all.Distributions() {
		name, metric, _ := strings.Cut(d.Name(), ".")
		if sc := byStep[name]; d.Namespace() == stepbeam.Namespace && sc != nil && metric == stepbeam.MetricKernelNS {
			sc.KernelNS += d.Result().Sum
		}
	}
	listed := map[string]bool{}
	for _, d := range report.Decisions {
		if !listed[d.Step] {
			listed[d.Step] = true
			m.Steps = append(m.Steps, *byStep[d.Step])
		}
	}
	m.CPUInsteadOfGPU = CPUInsteadOfGPU(report)
	for _, dc := range byDevice {
		m.Devices = append(m.Devices, *dc)
	}
	sort.Slice(m.Devices, func(i, j int) bool { return m.Devices[i].Device < m.Devices[j].Device })
	return m, nil
}

// deviceMetric parses a step metric's name after the step's ("device2.batches").
func deviceMetric(metric string) (device int, what string, ok bool) {
	rest, found := strings.CutPrefix(metric, stepbeam.MetricDevicePrefix)
	if !found {
		return 0, "", false
	}
	num, what, found := strings.Cut(rest, ".")
	n, err := strconv.Atoi(num)
	if !found || err != nil || n < 0 {
		return 0, "", false
	}
	return n, what, true
}

// CPUInsteadOfGPU returns why the report's steps that have a GPU op run on
// the CPU under --backend=auto, or "" where none does.
func CPUInsteadOfGPU(report backend.Report) string {
	for _, d := range report.Decisions {
		if d.Requested == backend.Auto && d.GPUOp != "" && d.Impl == backend.CPU {
			return strings.TrimPrefix(d.Reason, "auto: ")
		}
	}
	return ""
}

// PrintSteps writes one line per step: implementation, batches, items (with
// unit naming them, e.g. "pixels" or "rows"), MB in, kernel seconds, items/s
// and failures.
func (m Metrics) PrintSteps(w io.Writer, unit string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "step\timpl\tbatches\t%s\tMB in\tkernel s\t%s/s\tfailures\tcpu fallbacks\t\n", unit, unit)
	for _, st := range m.Steps {
		rate := "-"
		if st.KernelNS > 0 && st.Items > 0 {
			rate = fmt.Sprintf("%.3g", float64(st.Items)/(float64(st.KernelNS)/1e9))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%.3f\t%s\t%d\t%d\t\n", st.Step, st.Impl, st.Batches, st.Items,
			float64(st.Bytes)/1e6, float64(st.KernelNS)/1e9, rate, st.Failures, st.Fallbacks)
	}
	tw.Flush()
	if m.CPUInsteadOfGPU != "" {
		fmt.Fprintf(w, "GPU steps ran on the CPU (--backend=auto): %s\n", m.CPUInsteadOfGPU)
	}
	var fellBack int64
	for _, st := range m.Steps {
		fellBack += st.Fallbacks
	}
	if fellBack > 0 {
		fmt.Fprintf(w, "%d batch(es) of GPU steps ran on the CPU because the GPU executor could not run them (it could not start, has no device, or died twice); the workers' logs say why\n", fellBack)
	}
	m.PrintDevices(w)
}

// PrintDevices writes one line per device the GPU executors ran batches
// on: batches, MB (inputs and outputs), busy seconds (the batches' time
// there, summed) and share of the batches. Nothing when none ran there.
func (m Metrics) PrintDevices(w io.Writer) {
	if len(m.Devices) == 0 {
		return
	}
	var total int64
	for _, d := range m.Devices {
		total += d.Batches
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "GPU device\tbatches\tMB\tbusy s\tshare\t\n")
	for _, d := range m.Devices {
		share := 0.0
		if total > 0 {
			share = 100 * float64(d.Batches) / float64(total)
		}
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%.3f\t%.0f%%\t\n", d.Device, d.Batches, float64(d.Bytes)/1e6, float64(d.BusyNS)/1e9, share)
	}
	tw.Flush()
}
