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

// BenchmarkTransport moves one batch through the real executor process. In
// the same run it times a plain copy of the same bytes and reports the
// transport time over the memcpy time it should be compared with:
//
//   - "move": the batch goes to the executor (the client copies it into
//     shared memory; the op reads it in place and returns nothing):
//     ratio_to_memcpy, against one copy. The design's target is 1.5x.
//   - "view": there and back (the echo op copies it to its output region,
//     which the client reads in place, CallView): ratio_to_2memcpy, against
//     the two copies that moving a batch in and a result out take.
//   - "copy": as "view", with the result copied out of shared memory (Call):
//     ratio_to_3memcpy.
func BenchmarkTransport(b *testing.B) {
	c := client.New(client.Config{Path: executorBin, Stderr: io.Discard})
	defer c.Close()
	ctx := context.Background()
	for _, mode := range []string{"move", "view", "copy"} {
		for _, mib := range []int{1, 16, 64} {
			size := mib << 20
			src, dst := pattern(size, 5), make([]byte, size)
			copy(dst, src) // fault its pages in
			in := [][]byte{src}
			b.Run(fmt.Sprintf("%s/%dMiB", mode, mib), func(b *testing.B) {
				call := func() {
					if mode == "move" {
						if _, err := c.Call(ctx, testops.Discard, nil, in); err != nil {
							b.Fatal(err)
						}
						return
					}
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
				copies := map[string]int{"move": 1, "view": 2, "copy": 3}[mode]
				unit := "ratio_to_memcpy"
				if copies > 1 {
					unit = fmt.Sprintf("ratio_to_%dmemcpy", copies)
				}
				b.ReportMetric(float64(transport)/float64(memcpy)/float64(copies), unit)
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
