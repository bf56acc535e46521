//go:build cuda

package cudaenv

/*
#if !__has_include(<cuda.h>)
#error "beamgpu: cuda.h not found: a -tags cuda build needs the CUDA headers and link stubs in CGO_CFLAGS and CGO_LDFLAGS. Load them with: eval \"$(go run github.com/beamgpu/beamgpu/cmd/beamgpu-ptx -env)\" (in a module with the tool line: eval \"$(go tool beamgpu-ptx -env)\"; it fetches CUDA 11.8 once into a cache), or use a CUDA toolkit: CGO_CFLAGS=-I/usr/local/cuda/include CGO_LDFLAGS=-L/usr/local/cuda/lib64/stubs"
#endif
*/
import "C"
