//go:build cuda

package cuda

// These tests need a GPU: the test binary imports gorgonia.org/cu, whose init()
// exits with status 1 where no GPU is usable (and the binary does not start without
// libcuda.so.1). Where there is none, compile them only:
//
//	go test -tags cuda -c -o /dev/null ./runtime/executor/cuda/
//
// On a GPU machine (CUDA driver R520+, compute capability 7.0+, cuBLAS):
//
//	go test -tags cuda -race -v ./runtime/executor/cuda/
//
// They test the device layer alone, with the test kernels of testdata/kernels.cu:
// copies (pageable and page-locked), launches, row-major products against a float64
// reference, resident data and its eviction, the budget, concurrency and sticky
// errors. The steps' kernels are tested through the executor, against their CPU
// functions (integration's equivalence tests with BEAMGPU_EXECUTOR set to a CUDA
// build), and their launches without a GPU (steptest.CheckLaunch).

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"gorgonia.org/cu"
)

//go:embed testdata/kernels.ptx
var testPTX []byte

var (
	testModule  = gpu.NewModule("runtime/executor/cuda/testdata", testPTX)
	kernelScale = testModule.Kernel("scale")
	kernelPoke  = testModule.Kernel("poke")
)

// dev is GPU 0, opened once for the tests.
var dev *Device

const fatalChildEnv = "BEAMGPU_CUDA_FATAL_CHILD"

func TestMain(m *testing.M) {
	var err error
	dev, err = Open(0, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cuda tests: open GPU 0:", err)
		os.Exit(1)
	}
	if os.Getenv(fatalChildEnv) == "" {
		fmt.Fprintln(os.Stderr, "cuda tests on", dev.Info())
	}
	code := m.Run()
	if err := dev.Close(); err != nil && os.Getenv(fatalChildEnv) == "" {
		fmt.Fprintln(os.Stderr, "cuda tests: close:", err)
		code = 1
	}
	os.Exit(code)
}

func randomFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// scaleOn runs the scale kernel on x through a Launch, its output in out.
func scaleOn(d *Device, x []float32, s float64, output func(int) ([]byte, error)) ([]float32, error) {
	var y []float32
	err := d.Launch(context.Background(), "scale test", output, func(c gpu.Call) error {
		dx, err := gpu.Upload(c, x)
		if err != nil {
			return err
		}
		dy, err := c.Alloc(4 * int64(len(x)))
		if err != nil {
			return err
		}
		if y, err = gpu.Output[float32](c, len(x)); err != nil {
			return err
		}
		n := int64(len(x))
		if err := c.Launch(kernelScale, gpu.Grid1D(c.Device(), n), gpu.BlockThreads, dx, dy, n, s); err != nil {
			return err
		}
		return gpu.Download(c, y, dy)
	})
	return y, err
}

func TestLaunchCopiesAndKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{1, 255, 256, 1 << 20, 3<<20 + 5} {
		x := randomFloats(r, n)
		y, err := scaleOn(dev, x, 0.5, nil)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		for i := range x {
			if want := float32(float64(x[i]) * 0.5); y[i] != want {
				t.Fatalf("n=%d: y[%d] = %v, want %v", n, i, y[i], want)
			}
		}
	}
	if used := dev.Info().UsedBytes; used == 0 {
		t.Error("no buffer kept in the pool")
	}
}

// Page-locked host memory (as the executor's shared-memory arenas are) as the
// source and the destination of the copies.
func TestRegisteredHostMemory(t *testing.T) {
	const n = 1 << 20
	mem := make([]byte, 8*n+4096)
	off := int((4096 - uintptr(unsafe.Pointer(&mem[0]))%4096) % 4096)
	host := mem[off : off+8*n]
	release, err := dev.RegisterHost(host)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	x := unsafe.Slice((*float32)(unsafe.Pointer(&host[0])), n)
	r := rand.New(rand.NewPCG(2, 1))
	copy(x, randomFloats(r, n))
	outAt := 4 * n
	y, err := scaleOn(dev, x, 2, func(k int) ([]byte, error) { return host[outAt : outAt+k], nil })
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if y[i] != x[i]*2 {
			t.Fatalf("y[%d] = %v, want %v", i, y[i], x[i]*2)
		}
	}
}

// Gemm computes row-major products in every transposition against float64.
func TestGemmRowMajor(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	for _, sh := range [][3]int{{1, 1, 1}, {2, 3, 4}, {7, 31, 257}, {256, 784, 128}} {
		m, n, k := sh[0], sh[1], sh[2]
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			a, b := randomFloats(r, m*k), randomFloats(r, k*n)
			lda, ldb := k, n
			if tr[0] {
				lda = m
			}
			if tr[1] {
				ldb = k
			}
			at := func(i, p int) float64 { // op(A)[i][p]
				if tr[0] {
					return float64(a[p*lda+i])
				}
				return float64(a[i*lda+p])
			}
			bt := func(p, j int) float64 {
				if tr[1] {
					return float64(b[j*ldb+p])
				}
				return float64(b[p*ldb+j])
			}
			var c []float32
			err := dev.Launch(context.Background(), "gemm test", nil, func(call gpu.Call) error {
				da, err := gpu.Upload(call, a)
				if err != nil {
					return err
				}
				db, err := gpu.Upload(call, b)
				if err != nil {
					return err
				}
				dc, err := call.Alloc(4 * int64(m*n))
				if err != nil {
					return err
				}
				if err := call.Gemm(tr[0], tr[1], m, n, k, da, lda, db, ldb, dc, n); err != nil {
					return err
				}
				c = make([]float32, m*n)
				return gpu.Download(call, c, dc)
			})
			if err != nil {
				t.Fatalf("%dx%dx%d %v: %v", m, n, k, tr, err)
			}
			for i := range m {
				for j := range n {
					var want, mag float64
					for p := range k {
						want += at(i, p) * bt(p, j)
						mag += math.Abs(at(i, p) * bt(p, j))
					}
					if d := math.Abs(float64(c[i*n+j]) - want); d > 1e-5*mag+1e-30 {
						t.Fatalf("%dx%dx%d %v: C[%d][%d] = %v, want %v", m, n, k, tr, i, j, c[i*n+j], want)
					}
				}
			}
		}
	}
}

// Resident data is filled once per key, kept across calls, and evicted (least
// recently used first) when the budget needs room.
func TestResident(t *testing.T) {
	d, err := Open(0, 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fills := map[string]int{}
	use := func(key string, size int64) error {
		return d.Launch(context.Background(), "resident test", nil, func(c gpu.Call) error {
			p, err := c.Resident(key, size, func(c gpu.Call, p gpu.Ptr) error {
				fills[key]++
				return c.Copy(p, make([]byte, size))
			})
			if err == nil && p == 0 {
				err = errors.New("nil pointer")
			}
			return err
		})
	}
	for _, key := range []string{"a", "a", "b", "a"} {
		if err := use(key, 3<<20); err != nil {
			t.Fatal(key, err)
		}
	}
	if fills["a"] != 1 || fills["b"] != 1 {
		t.Fatalf("fills %v, want one each", fills)
	}
	if err := use("c", 3<<20); err != nil { // 9 MiB > 8: b, least recently used, goes
		t.Fatal(err)
	}
	if err := use("a", 3<<20); err != nil || fills["a"] != 1 {
		t.Fatalf("a was evicted (fills %v, %v)", fills, err)
	}
	if err := use("b", 3<<20); err != nil || fills["b"] != 2 {
		t.Fatalf("b was not evicted (fills %v, %v)", fills, err)
	}
	if err := use("huge", 64<<20); !errors.Is(err, protocol.ErrOutOfMemory) {
		t.Fatalf("over the budget: %v, want protocol.ErrOutOfMemory", err)
	}
}

// A batch over the budget is out of memory, after which the device serves the
// halves the client splits it into.
func TestBudget(t *testing.T) {
	small, err := Open(0, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	x := randomFloats(rand.New(rand.NewPCG(4, 1)), 1<<20) // 4 MiB in, 4 out
	_, err = scaleOn(small, x, 1, nil)
	var oom *OutOfMemoryError
	if !errors.Is(err, protocol.ErrOutOfMemory) || !errors.As(err, &oom) || oom.Budget != 4<<20 {
		t.Fatalf("over the budget: %v, want an OutOfMemoryError", err)
	}
	if _, err := scaleOn(small, x[:len(x)/4], 1, nil); err != nil {
		t.Fatalf("after an out-of-memory error: %v", err)
	}
	if used := small.Info().UsedBytes; used > 4<<20 {
		t.Errorf("%d bytes in use, budget %d", used, 4<<20)
	}
}

// TestConcurrent runs calls from more goroutines than lanes.
func TestConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(5, uint64(g)))
			for range 5 {
				x := randomFloats(r, 1+r.IntN(1<<20))
				y, err := scaleOn(dev, x, 3, nil)
				if err != nil {
					errs <- err
					return
				}
				if !slices.EqualFunc(x, y, func(a, b float32) bool { return float32(float64(a)*3) == b }) {
					errs <- fmt.Errorf("goroutine %d: wrong result", g)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestInfoAndClose(t *testing.T) {
	info := dev.Info()
	if info.Name == "" || info.TotalBytes <= 0 || info.FreeBytes < 0 || info.SMs <= 0 || info.ComputeMajor < 7 {
		t.Errorf("info %+v", info)
	}
	if !slices.Contains(info.Modules, testModule.Name) {
		t.Errorf("modules %v: the test module is not loaded", info.Modules)
	}
	t.Log(info)
	d, err := Open(0, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := scaleOn(d, []float32{1}, 1, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := Open(1<<20, 0); err == nil {
		t.Error("opened GPU 1048576")
	}
	err = dev.Launch(context.Background(), "unknown kernel", nil, func(c gpu.Call) error {
		return c.Launch(testModule.Kernel("no_such_kernel"), 1, 1)
	})
	if err == nil {
		t.Error("launched a kernel the module does not have")
	}
}

// TestFatal checks, in a child process (a sticky error ruins the process's
// context), that an illegal address in a kernel is fatal and that the device
// then refuses every call.
func TestFatal(t *testing.T) {
	if os.Getenv(fatalChildEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFatal$", "-test.v")
		cmd.Env = append(os.Environ(), fatalChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	err := dev.Launch(context.Background(), "fatal test", nil, func(c gpu.Call) error {
		return c.Launch(kernelPoke, 1, 1, gpu.Ptr(0x100), int64(0))
	})
	var fatal *FatalError
	if !errors.Is(err, protocol.ErrFatal) || !errors.As(err, &fatal) {
		t.Fatalf("illegal address: %v, want a fatal error", err)
	}
	t.Log(err)
	if _, err := scaleOn(dev, []float32{1}, 1, nil); !errors.Is(err, protocol.ErrFatal) {
		t.Fatalf("after a fatal error: %v, want protocol.ErrFatal", err)
	}
}

// TestClassify checks the error mapping without a failing GPU.
func TestClassify(t *testing.T) {
	if err := classify("x", cu.OutOfMemory); !errors.Is(err, protocol.ErrOutOfMemory) {
		t.Errorf("OutOfMemory: %v", err)
	}
	if err := classify("x", cu.IllegalAddress); !errors.Is(err, protocol.ErrFatal) {
		t.Errorf("IllegalAddress: %v", err)
	}
	if err := classify("x", cu.InvalidValue); errors.Is(err, protocol.ErrFatal) || errors.Is(err, protocol.ErrOutOfMemory) {
		t.Errorf("InvalidValue: %v", err)
	}
	if err := classify("x", fmt.Errorf("wrapped: %w", driverError(codeOutOfMemory))); !errors.Is(err, protocol.ErrOutOfMemory) {
		t.Errorf("wrapped driver OOM: %v", err)
	}
	if err := classify("x", blasAllocFailed); !errors.Is(err, protocol.ErrOutOfMemory) {
		t.Errorf("cuBLAS alloc failed: %v", err)
	}
	for n, want := range map[int64]int64{1: 256, 256: 256, 257: 512, 1 << 19: 1 << 19, 1<<19 + 1: 1 << 20, 1<<20 + 1: 2 << 20} {
		if got := sizeClass(n); got != want {
			t.Errorf("sizeClass(%d) = %d, want %d", n, got, want)
		}
	}
}
