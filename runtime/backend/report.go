package backend

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
)

// Report is the explain output: one decision per step.
type Report struct {
	Default   Kind       `json:"default"`
	Decisions []Decision `json:"steps"`
	// Devices are what the GPU executors ran on each device, known once
	// the run is done (--explain_json is then written again with them);
	// none before, or when no batch ran on an executor.
	Devices []DeviceCounts `json:"devices,omitempty"`
}

// DeviceCounts are what the GPU executors ran on one device (by its ordinal
// in its executor; on a worker with several GPUs, one per GPU), summed over
// the steps and the workers: batches, their bytes (inputs and outputs) and
// the time they ran there (summed over batches).
type DeviceCounts struct {
	Device  int   `json:"device"`
	Batches int64 `json:"batches"`
	Bytes   int64 `json:"bytes"`
	BusyNS  int64 `json:"busy_ns"`
}

// WriteText writes one line per step (per use, for a step with uses):
// step, implementation, GPU op, hints, reason.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "explain (--backend=%s)\n", r.Default)
	fmt.Fprintln(tw, "  STEP\tIMPL\tGPU OP\tHINTS\tREASON")
	for _, d := range r.Decisions {
		op := d.GPUOp
		if op == "" {
			op = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", d.Label(), d.Impl, op, d.Hints, d.Reason)
	}
	if err := tw.Flush(); err != nil || len(r.Devices) == 0 {
		return err
	}
	dw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(dw, "  GPU DEVICE\tBATCHES\tMB\tBUSY S\t")
	for _, d := range r.Devices {
		fmt.Fprintf(dw, "  %d\t%d\t%.2f\t%.3f\t\n", d.Device, d.Batches, float64(d.Bytes)/1e6, float64(d.BusyNS)/1e9)
	}
	return dw.Flush()
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteJSONFile writes the report as JSON to path.
func (r Report) WriteJSONFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("explain: %w", err)
	}
	if err := r.WriteJSON(f); err != nil {
		f.Close()
		return fmt.Errorf("explain: writing %s: %w", path, err)
	}
	return f.Close()
}

// Impl returns the implementation chosen for step (a name, or a use's label
// such as "onnx[resnet50.onnx]"; a name with uses gives its first use's), or
// "" if it was not resolved.
func (r Report) Impl(step string) Kind {
	for _, d := range r.Decisions {
		if d.Step == step || d.Label() == step {
			return d.Impl
		}
	}
	return ""
}
