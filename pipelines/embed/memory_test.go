package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// docs/embed.md's memory promise: texts stream through (read in shards,
// batched in windows, written per shard), so that the peak RSS over
// 16,000 texts of 2 kB exceeds the peak over 1,600 of them by less than
// 32 MB (1.7 to 3.3 MB measured), where a pipeline that held every
// text's tokens does not: with one window over all of them (--shard_rows
// and --sort_window of 100,000) the peak was 77 MB higher. The model is
// the stub (tokens cut at 64), so that the four runs take seconds and
// what is measured is the pipeline's, not the model's, memory; GOGC=25
// and the least of two runs keep the peaks steady.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("embeds 16,000 texts twice (seconds)")
	}
	dir := t.TempDir()
	para := strings.Repeat("Beam pipelines embed text for search and retrieval, a batch at a time. ", 28) // 2 kB
	write := func(name string, n int) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		require.NoError(t, err)
		w := bufio.NewWriterSize(f, 1<<20)
		for i := range n {
			b, err := json.Marshal(map[string]any{"id": i, "text": fmt.Sprintf("%d %s", i, para)})
			require.NoError(t, err)
			_, err = w.Write(append(b, '\n'))
			require.NoError(t, err)
		}
		require.NoError(t, w.Flush())
		require.NoError(t, f.Close())
		return path
	}
	smallIn, bigIn := write("small.jsonl", 1600), write("big.jsonl", 16000)
	least := func(in string) int64 {
		var v []int64
		for k := range 2 {
			out := filepath.Join(dir, "out"+strconv.Itoa(k))
			v = append(v, peakRSS(t, "--model="+testModel, "--tokenizer="+testTok, "--input="+in, refLength, "--backend=stub",
				"--shard_rows=512", "--sort_window=512", "--output="+out))
			require.NoError(t, os.RemoveAll(out))
		}
		return slices.Min(v)
	}
	base, peak := least(smallIn), least(bigIn)
	t.Logf("peak RSS: %.1f MB over 1,600 texts of 2 kB, %.1f MB over 16,000: growth %.1f MB", float64(base)/1e6, float64(peak)/1e6, float64(peak-base)/1e6)
	assert.Less(t, peak-base, int64(32<<20), "memory grows with the texts")
}
