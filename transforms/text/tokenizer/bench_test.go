package tokenizer

import (
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
)

// benchProse is English prose: paragraphs of the corpus's sentences,
// about 100 tokens each.
func benchProse(n int) []string {
	r := rand.New(rand.NewPCG(42, 0))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for b.Len() < 450 {
			b.WriteString(corpusSentence(r, 8+r.IntN(20)))
			b.WriteByte(' ')
		}
		out[i] = b.String()
	}
	return out
}

// BenchmarkEncode encodes English prose with BERT's uncased tokenizer on one
// goroutine and reports tokens per second.
func BenchmarkEncode(b *testing.B) {
	tk := loadBERT(b)
	texts := benchProse(256)
	tokens, bytes := 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := texts[i%len(texts)]
		e, err := tk.Encode(s)
		if err != nil {
			b.Fatal(err)
		}
		tokens += e.Len()
		bytes += len(s)
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
	b.SetBytes(int64(bytes / b.N))
}

// BenchmarkEncodeParallel is BenchmarkEncode on every core, one Tokenizer
// shared by all goroutines.
func BenchmarkEncodeParallel(b *testing.B) {
	tk := loadBERT(b)
	texts := benchProse(256)
	var tokens int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		n, i := 0, 0
		for pb.Next() {
			e, err := tk.Encode(texts[i%len(texts)])
			if err != nil {
				b.Error(err)
				return
			}
			n += e.Len()
			i++
		}
		addInt64(&tokens, int64(n))
	})
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
}

func addInt64(p *int64, v int64) { atomic.AddInt64(p, v) }
