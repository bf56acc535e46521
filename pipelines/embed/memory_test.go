package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peakRSS runs the command (this test binary as the child) with args and
// returns its peak RSS.
func peakRSS(t *testing.T, args ...string) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMain+"=1", "GOGC=25")
	outb, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", outb)
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(outb)
	require.NotNil(t, m, "no VmHWM in %s", outb)
	kb, err := strconv.ParseInt(string(m[1]), 10, 64)
	require.NoError(t, err)
	return kb * 1024
}

// docs/embed.md's memory promise, as pipelines/infer's: the peak RSS over
// 24,000 texts exceeds the peak over 2,400 texts (the corpus repeated) by
// less than what holding the texts would take. Both runs are the same
// command (GOGC=25, the least peak of two runs, 512-text shards and
// windows); only the texts differ. A pipeline that held the tokenized
// texts (24,000 x 3 inputs and a mask of up to 64 int64 tokens, about 30
// MB with the arrays' headers), or every embedding before writing (24,000
// x 16 float32 and their JSON, 3 MB), fails it.
func TestPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("embeds 24,000 texts four times (about half a minute)")
	}
	data, err := os.ReadFile(corpus)
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name string, copies int) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, bytes.Repeat(data, copies), 0o644))
		return path
	}
	smallIn, bigIn := write("small.jsonl", 6), write("big.jsonl", 60)
	least := func(in string) int64 {
		var v []int64
		for k := range 2 {
			v = append(v, peakRSS(t, "--model="+testModel, "--tokenizer="+testTok, "--input="+in, refLength, "--backend=cpu",
				"--progress=0", "--shard_rows=512", "--sort_window=512", "--output="+filepath.Join(dir, "out"+strconv.Itoa(k))))
		}
		return slices.Min(v)
	}
	base, peak := least(smallIn), least(bigIn)
	t.Logf("peak RSS: %.1f MB over 2,400 texts, %.1f MB over 24,000: growth %.1f MB", float64(base)/1e6, float64(peak)/1e6, float64(peak-base)/1e6)
	assert.Less(t, peak-base, int64(12<<20), "memory grows with the texts")
}
