// Package executortest lets a test binary serve as the GPU executor.
//
// Tests then run ops through a real second process (over the real protocol
// and shared memory) without building an executor binary. It serves the
// generic test ops of package testops (echo, sum_f32, sleep, crash, fatal)
// and the ops the test gives; steptest.MaybeServe gives every registered
// step's reference op.
//
// In the test package (runtime/executor/client's, whose tests start
// executorBin):
//
//	func TestMain(m *testing.M) {
//		executortest.MaybeServe(nil)
//		executorBin = executortest.Use()
//		os.Exit(m.Run())
//	}
//
// MaybeServe, in the child the tests start, serves and exits; Use, in the
// parent, returns the executor to start: this test binary.
//
// The test ops are served only by such test builds, never by an executor a
// worker runs.
package executortest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/runtime/executor/testops"
)

// EnvServe marks a process started as a test executor (Use sets it for the
// processes this one starts): a test that starts its own binary again as a
// test, not as an executor, leaves it out of the child's environment.
const EnvServe = env

// env marks the child process started as an executor; crashEnv and
// markEnv configure CrashOnce.
const (
	env       = "BEAMGPU_EXECUTORTEST_SERVE"
	crashEnv  = "BEAMGPU_EXECUTORTEST_CRASH_AT"
	budgetEnv = "BEAMGPU_EXECUTORTEST_MEMORY_BUDGET"
	markEnv   = "BEAMGPU_EXECUTORTEST_CRASH_MARK"
)

// MaybeServe, in a process started as an executor by Use, serves the test
// ops and the ops that ops returns (nil: none), then exits; elsewhere it
// returns at once. ops is called only in the executor process.
func MaybeServe(ops func() []server.Op) {
	if os.Getenv(env) != "1" {
		return
	}
	for _, op := range testops.All() {
		server.Register(op)
	}
	crashAt, _ := strconv.Atoi(os.Getenv(crashEnv))
	var calls atomic.Int64
	var served []server.Op
	if ops != nil {
		served = ops()
	}
	for _, op := range served {
		if crashAt != 0 {
			op = crashingOp{Op: op, at: int64(crashAt), calls: &calls, mark: os.Getenv(markEnv)}
		}
		server.Register(op)
	}
	devs, err := executor.VirtualDevices("cpu-reference (test binary)")
	b := executor.Build{Kind: "reference (CPU, test binary)", Virtual: true,
		Devices:  func() []string { return devs },
		NoDevice: func() string { return fmt.Sprint(err) }}
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "serve" {
		// Test executors poison their outputs: an op that leaves part of
		// one unwritten fails the equivalence tests.
		args = append([]string{"serve", "--poison_outputs"}, args[1:]...)
		if b := os.Getenv(budgetEnv); b != "" {
			args = append(args, "--memory_budget="+b)
		}
	}
	os.Exit(executor.Main(b, args, os.Stdout, os.Stderr))
}

// Use marks the executors this process starts as test executors and
// returns the path of this test binary, to start as one.
func Use() string {
	os.Setenv(env, "1") // inherited by the executors this process starts
	path, err := os.Executable()
	if err != nil {
		path = os.Args[0]
	}
	return path
}

// CrashAlways makes the executors this process starts next die in every
// op given to MaybeServe (on), as an executor on a machine whose GPU is gone would.
func CrashAlways(on bool) {
	if on {
		os.Setenv(crashEnv, "-1")
	} else {
		os.Unsetenv(crashEnv)
	}
}

// StallAlways makes the executors this process starts next stop
// themselves (SIGSTOP) in every op given to MaybeServe (on), as an
// executor hung in its driver would look to its client: alive, silent.
func StallAlways(on bool) {
	if on {
		os.Setenv(crashEnv, "-2")
	} else {
		os.Unsetenv(crashEnv)
	}
}

// CrashOnce makes the next executor this process starts die (exit status
// 86, as if killed) in the middle of its n-th call of an op given to MaybeServe, before writing any
// output; the executor started after it does not crash. mark is a file path
// that records the crash.
func CrashOnce(n int, mark string) {
	os.Setenv(crashEnv, strconv.Itoa(n))
	os.Setenv(markEnv, mark)
}

type crashingOp struct {
	server.Op
	at    int64
	calls *atomic.Int64
	mark  string
}

func (o crashingOp) Run(ctx context.Context, params []byte, in [][]byte, out server.Outputs) error {
	if o.at == -2 {
		// The stop takes effect a moment after kill returns: wait for it
		// (and, continued, stay silent).
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		<-ctx.Done()
		return ctx.Err()
	}
	if o.at < 0 {
		os.Exit(86)
	}
	if o.calls.Add(1) == o.at {
		if f, err := os.OpenFile(o.mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
			os.Exit(86)
		}
	}
	return o.Op.Run(ctx, params, in, out)
}

// MemoryBudget makes the executors this process starts next hold at most
// bytes of inputs and outputs at once (0: unlimited), so tests can make a
// batch not fit.
func MemoryBudget(bytes int64) {
	if bytes == 0 {
		os.Unsetenv(budgetEnv)
		return
	}
	os.Setenv(budgetEnv, strconv.FormatInt(bytes, 10))
}
