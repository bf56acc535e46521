package client_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/testops"
)

// BenchmarkTransport moves one batch through the real executor process and
// back: the client copies it into shared memory, the echo op copies it to
// its output region, and the client reads the output, either as a view
// (CallView: "view") or copied out (Call: "copy"). In the same run it times
// a plain copy of the same bytes and reports ratio_to_memcpy, the transport
// time over the memcpy time (the design's target is 1.5x). The floor is
// about 2 copies for "view" (client in, op out) and 3 for "copy".
func BenchmarkTransport(b *testing.B) {
	c := client.New(client.Config{Path: executorBin, Stderr: io.Discard})
	defer c.Close()
	ctx := context.Background()
	for _, mode := range []string{"view", "copy"} {
		for _, mib := range []int{1, 16, 64} {
			size := mib << 20
			src, dst := pattern(size, 5), make([]byte, size)
			copy(dst, src) // fault its pages in
			in := [][]byte{src}
			b.Run(fmt.Sprintf("%s/%dMiB", mode, mib), func(b *testing.B) {
				call := func() {
					if mode == "copy" {
						out, err := c.Call(ctx, testops.Echo, nil, in)
						if err != nil || len(out[0]) != size {
							b.Fatal(err)
						}
						return
					}
					r, err := c.CallView(ctx, testops.Echo, nil, in)
					if err != nil {
						b.Fatal(err)
					}
					if o := r.Outputs[0]; len(o) != size || o[0] != src[0] || o[size-1] != src[size-1] {
						b.Fatal("wrong output")
					}
					r.Release()
				}
				call() // start the executor, size and fault in the arena
				b.SetBytes(int64(size))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					call()
				}
				b.StopTimer()
				transport := b.Elapsed() / time.Duration(b.N)

				t0 := time.Now()
				for i := 0; i < b.N; i++ {
					copy(dst, src)
				}
				memcpy := time.Since(t0) / time.Duration(b.N)
				b.ReportMetric(float64(memcpy.Nanoseconds()), "memcpy_ns/op")
				b.ReportMetric(float64(transport)/float64(memcpy), "ratio_to_memcpy")
			})
		}
	}
}

// BenchmarkEmptyRoundTrip is one call of an op with no data: the fixed cost
// of a call (two frames over the socket and the executor's dispatch).
func BenchmarkEmptyRoundTrip(b *testing.B) {
	c := client.New(client.Config{Path: executorBin, Stderr: io.Discard})
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Call(ctx, testops.Echo, nil, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Call(ctx, testops.Echo, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "us/call")
}
