package shm

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Copy copies exactly what the built-in copy does, at every size around its
// thresholds and with lengths that differ.
func TestCopyIsCopy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 63, copyPart, copyParallelMin - 1, copyParallelMin, copyParallelMin + 1, 3*copyParallelMin + 77, 33 << 20} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		for _, dn := range []int{n, n + 5, max(0, n-3)} {
			want := make([]byte, dn)
			for i := range want {
				want[i] = 0xAB
			}
			got := append([]byte(nil), want...)
			wn := copy(want, src)
			require.Equal(t, wn, Copy(got, src), "n=%d dst=%d", n, dn)
			require.True(t, string(want) == string(got), "n=%d dst=%d: bytes differ", n, dn)
		}
	}
}

// BenchmarkCopy reports Copy's speed into memory written before (warm) as a
// ratio to the built-in copy measured in the same run.
func BenchmarkCopy(b *testing.B) {
	for _, mib := range []int{8, 64, 256} {
		b.Run(fmt.Sprintf("MiB=%d", mib), func(b *testing.B) {
			src, dst := make([]byte, mib<<20), make([]byte, mib<<20)
			for i := range src { // never written, src would read the kernel's zero page, from the cache
				src[i] = byte(i * 7)
			}
			copy(dst, src)
			b.SetBytes(int64(len(src)))
			var one, par float64
			for b.Loop() {
				t := time.Now()
				copy(dst, src)
				one += float64(time.Since(t))
				t = time.Now()
				Copy(dst, src)
				par += float64(time.Since(t))
			}
			b.ReportMetric(one/par, "ratio_to_copy")
		})
	}
}
