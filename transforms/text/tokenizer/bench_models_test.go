package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// BenchmarkModelsVsTokenizersJS encodes the prose with GPT-2's and the
// SentencePiece Unigram tokenizer here and with tokenizers.js (testdata/bench.js)
// on the same file and reports the Go tokenizer's tokens per CPU second over
// tokenizers.js's (ratio_to_js). tokenizers.js's Precompiled is NFKC, cheaper
// than the charsmap this package reads.
func BenchmarkModelsVsTokenizersJS(b *testing.B) {
	modules := referenceModules(b)
	lines := proseLines(b)
	dir := b.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, s := range lines {
		require.NoError(b, enc.Encode(refInput{A: s}))
	}
	require.NoError(b, os.WriteFile(in, buf.Bytes(), 0o644))
	noConfig := filepath.Join(dir, "tokenizer_config.json")
	require.NoError(b, os.WriteFile(noConfig, []byte("{}"), 0o644))
	for _, c := range []struct{ name, file, config string }{
		{"gpt2", "testdata/gpt2/tokenizer.json", "testdata/gpt2/tokenizer_config.json"},
		{"unigram", "testdata/spm/test_model.tokenizer.json", noConfig},
	} {
		b.Run(c.name, func(b *testing.B) {
			rounds := 1 + b.N/len(lines) // passes over the prose, each line one op
			cmd := exec.Command("node", "testdata/bench.js", c.file, c.config, in, strconv.Itoa(rounds))
			cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
			out, err := cmd.Output()
			require.NoError(b, err, "bench.js")
			var r struct {
				Tokens     int     `json:"tokens"`
				CPUSeconds float64 `json:"cpu_seconds"`
			}
			require.NoError(b, json.Unmarshal(out, &r), "bench.js said %q", out)
			tk, err := LoadFile(c.file)
			require.NoError(b, err)
			full, err := tk.WithTruncation(nil) // tokenizers.js does not truncate
			require.NoError(b, err)
			for _, s := range lines { // warm up, as bench.js does
				_, err := full.Encode(s)
				require.NoError(b, err)
			}
			goTokens := 0
			cpu0 := cpuSeconds()
			for range rounds {
				for _, s := range lines {
					e, err := full.Encode(s)
					require.NoError(b, err)
					goTokens += e.Len()
				}
			}
			goRate := float64(goTokens) / (cpuSeconds() - cpu0)
			jsRate := float64(r.Tokens) / r.CPUSeconds
			b.ReportMetric(goRate, "go_tokens/cpu-s")
			b.ReportMetric(jsRate, "js_tokens/cpu-s")
			b.ReportMetric(goRate/jsRate, "ratio_to_js")
		})
	}
}
