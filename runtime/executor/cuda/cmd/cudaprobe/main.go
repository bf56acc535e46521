//go:build cuda

// Command cudaprobe opens a GPU with the executor's device layer
// (runtime/executor/cuda) and prints what it found: name, compute capability, SMs,
// the CUDA version the driver supports, memory, the budget, MPS. Opening loads the
// steps' PTX, which the driver JIT-compiles for the GPU, so a successful probe also
// shows that the kernels load; -check then runs one small call of each kind and
// compares it with the CPU formula.
//
//	cudaprobe [-device 0] [-budget_mib 0] [-check]
//
// Exit status: 0, or 1 when the device cannot be opened or a check fails. On a
// machine without a usable GPU gorgonia.org/cu exits with status 1 before main runs
// (and without libcuda.so.1 the binary does not start: status 127). Build it with
// containers/build-cuda.sh.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/beamgpu/beamgpu/runtime/executor/cuda"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

func main() {
	ordinal := flag.Int("device", 0, "GPU ordinal")
	budget := flag.Int64("budget_mib", 0, "device memory budget in MiB (0: 90% of the free memory)")
	check := flag.Bool("check", false, "run a small call of each kind and compare it with the CPU")
	flag.Parse()
	d, err := cuda.Open(*ordinal, *budget<<20)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cudaprobe:", err)
		os.Exit(1)
	}
	defer d.Close()
	fmt.Println(d.Info())
	if *check {
		if err := smoke(d); err != nil {
			fmt.Fprintln(os.Stderr, "cudaprobe: check:", err)
			d.Close()
			os.Exit(1)
		}
		fmt.Println("check: ok")
	}
}

// smoke runs one tiny call per kind of kernel (elementwise, row-wise, cuBLAS +
// kernel, kNN) and checks the results.
func smoke(d *cuda.Device) error {
	toa, err := d.TOA([]uint16{0, 1, 10000}, 2e-5, -0.1)
	if err != nil {
		return err
	}
	if !math.IsNaN(float64(toa[0])) || toa[1] != float32(2e-5-0.1) || toa[2] != float32(10000*2e-5-0.1) {
		return fmt.Errorf("toa: %v", toa)
	}
	sm, err := d.Softmax([]float32{0, 0, float32(math.Log(2))}, 1, 3)
	if err != nil {
		return err
	}
	if math.Abs(float64(sm[2])-0.5) > 1e-6 || math.Abs(float64(sm[0])-0.25) > 1e-6 {
		return fmt.Errorf("softmax: %v", sm)
	}
	y, err := d.Dense([]float32{1, 2, 3, 4, 5, 6}, 2, []float32{1, 0, 0, 1, 1, 1}, []float32{0.5, -20}, 3, 2, true)
	if err != nil {
		return err
	}
	if want := []float32{4.5, 0, 10.5, 0}; fmt.Sprint(y) != fmt.Sprint(want) {
		return fmt.Errorf("dense: %v, want %v", y, want)
	}
	ref, err := d.UploadReference([]float32{0, 0, 1, 0, 0, 1, 1, 1}, 4, 2)
	if err != nil {
		return err
	}
	defer ref.Free()
	idx, dist, err := d.KNN([]float32{0.9, 0.8}, 1, ref, 2)
	if err != nil {
		return err
	}
	if idx[0] != 3 || math.Abs(float64(dist[0])-0.05) > 1e-6 {
		return fmt.Errorf("knn: %v %v", idx, dist)
	}
	if _, err := d.Standardize([]float32{255}, 1, 1, tensor.Scaler{Mode: tensor.ScaleUnit}); err != nil {
		return err
	}
	return nil
}
