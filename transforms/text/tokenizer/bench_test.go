package tokenizer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	cpu0 := cpuSeconds()
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
	b.ReportMetric(float64(tokens)/(cpuSeconds()-cpu0), "tokens/cpu-s")
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

// BenchmarkEncodeTokenizersJS is BenchmarkEncode's peer: tokenizers.js
// (node, one thread) encoding the same prose with the same file, timed
// inside node after a warm-up pass. It reports tokens per second of wall
// time and per CPU second, and ratio_to_js: the Go tokenizer's tokens per
// CPU second on the same texts, right after, over tokenizers.js's.
func BenchmarkEncodeTokenizersJS(b *testing.B) {
	modules := referenceModules(b)
	texts := benchProse(256)
	dir := b.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, s := range texts {
		if err := enc.Encode(refInput{A: s}); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	rounds := b.N/len(texts) + 1
	cmd := exec.Command("node", "testdata/bench.js", bertUncased, filepath.Join(filepath.Dir(bertUncased), "tokenizer_config.json"), in, strconv.Itoa(rounds))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	b.ResetTimer()
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("bench.js: %v", err)
	}
	var r struct {
		Tokens     int     `json:"tokens"`
		Seconds    float64 `json:"seconds"`
		CPUSeconds float64 `json:"cpu_seconds"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("bench.js said %q: %v", out, err)
	}
	b.ReportMetric(float64(r.Tokens)/r.Seconds, "tokens/s")
	b.ReportMetric(float64(r.Tokens)/r.CPUSeconds, "tokens/cpu-s")
	b.StopTimer()
	tk := loadBERT(b)
	goTokens := 0
	cpu0 := cpuSeconds()
	for range rounds {
		for _, s := range texts {
			e, err := tk.Encode(s)
			if err != nil {
				b.Fatal(err)
			}
			goTokens += e.Len()
		}
	}
	goRate := float64(goTokens) / (cpuSeconds() - cpu0)
	b.ReportMetric(goRate/(float64(r.Tokens)/r.CPUSeconds), "ratio_to_js")
}
