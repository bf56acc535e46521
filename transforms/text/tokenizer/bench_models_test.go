package tokenizer

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// proseLines is English prose, one paragraph line per text.
func proseLines(b *testing.B) []string {
	raw, err := os.ReadFile("testdata/prose/botchan.txt")
	require.NoError(b, err)
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// benchmarkEncode encodes the prose line by line and reports tokens per
// second (on one core: b.N passes over the text on one goroutine).
func benchmarkEncode(b *testing.B, file string) {
	tk, err := LoadFile(file)
	require.NoError(b, err)
	lines := proseLines(b)
	tokens := 0
	for _, l := range lines {
		e, err := tk.Encode(l)
		require.NoError(b, err)
		tokens += e.Len()
	}
	b.ResetTimer()
	cpu := cpuSeconds()
	for b.Loop() {
		for _, l := range lines {
			if _, err := tk.Encode(l); err != nil {
				b.Fatal(err)
			}
		}
	}
	cpu = cpuSeconds() - cpu
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	if cpu > 0 {
		b.ReportMetric(float64(tokens)*float64(b.N)/cpu, "tokens/cpu-s")
	}
}

func BenchmarkEncodeGPT2(b *testing.B) { benchmarkEncode(b, "testdata/gpt2/tokenizer.json") }
func BenchmarkEncodeUnigram(b *testing.B) {
	benchmarkEncode(b, "testdata/spm/test_model.tokenizer.json")
}

// BenchmarkEncodeBERTProse is the peer: BERT's WordPiece on the same prose.
func BenchmarkEncodeBERTProse(b *testing.B) {
	benchmarkEncode(b, "testdata/bert/uncased/tokenizer.json")
}

// BenchmarkBPEUncached is the BPE model's merging alone, every word anew
// (the cache emptied before each pass).
func BenchmarkBPEUncached(b *testing.B) {
	m := loadGPT2Model(b)
	var words []string
	for _, l := range proseLines(b) {
		gpt2Split(l, func(s, e int) {
			var sb strings.Builder
			for i := s; i < e; i++ {
				sb.WriteString(byteLevelEncoded[l[i]])
			}
			words = append(words, sb.String())
		})
	}
	tokens := 0
	for _, w := range words {
		tokens += len(m.mergeWord(w))
	}
	b.ResetTimer()
	for b.Loop() {
		for _, w := range words {
			m.mergeWord(w)
		}
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// cpuSeconds is the CPU time (user and system) this process has used: on a
// shared machine the wall clock also counts other processes' time, so the
// benchmarks report tokens per CPU second too (the garbage collector's work
// included: the cost on one core).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
