package cuda

// This file has no build tag: the driver check is pure Go, so it is tested
// without a GPU; Open (-tags cuda) calls it with what the driver reports.

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// MinDriverCUDA is the CUDA version the executor needs of the NVIDIA
// driver, as cuDriverGetVersion reports it (1000*major + 10*minor): 12.0.
// The worker image is CUDA 12.4 (its cuBLAS 12 runs, with CUDA's minor
// version compatibility, on any driver for 12.0), and its kernels' PTX, from
// nvcc 11.8, needs no newer. Drivers of branch R525 and later support 12.0.
const MinDriverCUDA = 12000

// MinDriverBranch is the oldest driver branch that supports MinDriverCUDA.
const MinDriverBranch = 525

// DriverVersionFile is where Linux's NVIDIA kernel module says its version
// (visible in containers too).
const DriverVersionFile = "/proc/driver/nvidia/version"

// kernelModule matches the module's version in DriverVersionFile:
// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ...",
// or "... Open Kernel Module for x86_64  580.159.03  Release Build ...".
var kernelModule = regexp.MustCompile(`Kernel Module(?: for \S+)?\s+([0-9]+(?:\.[0-9]+)+)`)

// ParseDriverVersion returns the driver version in the text of
// DriverVersionFile ("535.104.05"), or "" where there is none.
func ParseDriverVersion(text string) string {
	if m := kernelModule.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// ReadDriverVersion reads the driver version from DriverVersionFile; ""
// where it cannot (no NVIDIA module, or another system).
func ReadDriverVersion() string {
	b, err := os.ReadFile(DriverVersionFile)
	if err != nil {
		return ""
	}
	return ParseDriverVersion(string(b))
}

// CheckDriver checks that the driver can run the executor: cudaVersion is
// cuDriverGetVersion's answer, driverVersion the module's version where
// known (ReadDriverVersion, "" if not). The error names both, what is
// needed, and how to get it on Dataflow; Open returns it, so the
// executor's handshake announces no device with it as the reason, and
// under --backend=auto the explain report and the workers' fallbacks say so.
func CheckDriver(cudaVersion int, driverVersion string) error {
	if cudaVersion >= MinDriverCUDA {
		return nil
	}
	found := "the NVIDIA driver"
	if driverVersion != "" {
		found += " " + driverVersion
	}
	if cudaVersion > 0 {
		found += fmt.Sprintf(" (CUDA %d.%d)", cudaVersion/1000, cudaVersion%1000/10)
	}
	return fmt.Errorf("cuda: %s is too old: this executor needs a driver for CUDA %d.%d or newer, R%d or newer (the worker image is CUDA 12); on Dataflow ask for it with install-nvidia-driver:5xx (or :latest) in worker_accelerator or the accelerator hint",
		found, MinDriverCUDA/1000, MinDriverCUDA%1000/10, MinDriverBranch)
}

// DriverBranch returns the branch of a driver version: 535 for
// "535.104.05"; 0 where the version is not one.
func DriverBranch(version string) int {
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return n
}
