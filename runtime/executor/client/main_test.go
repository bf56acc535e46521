package client_test

import (
	"os"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/executortest"
)

// executorBin is the executor the package's tests and benchmarks start: this
// test binary, started again as an executor serving the test ops (echo,
// sum_f32, sleep, crash, fatal, ...), so they go through a real second
// process without building one.
var executorBin string

func TestMain(m *testing.M) {
	executortest.MaybeServe(nil)
	executorBin = executortest.Use()
	os.Exit(m.Run())
}
