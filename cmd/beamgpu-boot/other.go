//go:build !linux

// Command beamgpu-boot starts a beamgpu worker (Linux only: the worker image
// and the rehearsal of a Dataflow worker are Linux).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "beamgpu-boot: runs on Linux only (the worker image, the rehearsal of a Dataflow worker)")
	os.Exit(1)
}
