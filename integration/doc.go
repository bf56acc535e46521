// Package integration holds the tests that cross packages: every step's GPU
// implementation, through a real out-of-process executor, against its CPU
// implementation (the equivalence harness). In CI the executor is the CPU
// reference executor (this test binary, started again as the executor);
// on a GPU machine `make gpu-test` runs the same tests against the CUDA
// executor (BEAMGPU_EXECUTOR pointing at a -tags cuda build).
package integration
