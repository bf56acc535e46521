//go:build cuda

// Command cudaprobe opens a GPU with the executor's device layer
// (runtime/executor/cuda) and prints what it found: name, compute capability, SMs,
// the CUDA version the driver supports, memory, the budget, MPS. -check then runs a
// copy there and back, page-locked and not, and a small cuBLAS product through the
// device layer, and checks the results. (The steps' kernels are checked by the
// executor's selftest, which loads their modules.)
//
//	cudaprobe [-device 0] [-budget_mib 0] [-check]
//
// Exit status: 0, or 1 when the device cannot be opened or a check fails. On a
// machine without a usable GPU gorgonia.org/cu exits with status 1 before main runs
// (and without libcuda.so.1 the binary does not start: status 127). Build it with
// containers/build-cuda.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/beamgpu/beamgpu/runtime/executor/cuda"
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

func main() {
	ordinal := flag.Int("device", 0, "GPU ordinal")
	budget := flag.Int64("budget_mib", 0, "device memory budget in MiB (0: 90% of the free memory)")
	check := flag.Bool("check", false, "copy there and back and run a small product, and check them")
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

// smoke copies to the device and back (pageable, then page-locked) and runs a
// 2x3 by 3x2 product.
func smoke(d *cuda.Device) error {
	x := []float32{1, 2, 3, 4, 5, 6}
	w := []float32{1, 0, 0, 1, 1, 1}
	locked := make([]byte, 1<<16)
	release, err := d.RegisterHost(locked)
	if err != nil {
		return fmt.Errorf("page-lock: %w", err)
	}
	defer release()
	var back, y []float32
	err = d.Launch(context.Background(), "cudaprobe", func(n int) ([]byte, error) { return locked[:n], nil }, func(c gpu.Call) error {
		dx, err := gpu.Upload(c, x)
		if err != nil {
			return err
		}
		dw, err := gpu.Upload(c, w)
		if err != nil {
			return err
		}
		dy, err := c.Alloc(16)
		if err != nil {
			return err
		}
		if err := c.Gemm(false, false, 2, 2, 3, dx, 3, dw, 2, dy, 2); err != nil {
			return err
		}
		back = make([]float32, len(x))
		if err := gpu.Download(c, back, dx); err != nil {
			return err
		}
		if y, err = gpu.Output[float32](c, 4); err != nil {
			return err
		}
		return gpu.Download(c, y, dy)
	})
	if err != nil {
		return err
	}
	if !slices.Equal(back, x) {
		return fmt.Errorf("copy there and back: %v, want %v", back, x)
	}
	if want := []float32{4, 5, 10, 11}; !slices.Equal(y, want) {
		return fmt.Errorf("product: %v, want %v", y, want)
	}
	return nil
}
