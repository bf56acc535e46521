package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuSeconds is this process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// benchCorpus writes the test corpus repeated copies times.
func benchCorpus(b *testing.B, copies int) (string, int) {
	b.Helper()
	data, err := os.ReadFile(corpus)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "corpus.jsonl")
	if err := os.WriteFile(path, bytes.Repeat(data, copies), 0o644); err != nil {
		b.Fatal(err)
	}
	return path, copies * bytes.Count(data, []byte("\n"))
}

// peer runs containers/onnx/embed_bench.js (tokenizers.js + ONNX Runtime
// doing the same work) and returns its texts, wall and CPU seconds.
func peer(b *testing.B, in string, threads, rounds int) (texts int, wall, cpu float64) {
	b.Helper()
	root := "../.."
	var mods []string
	for _, s := range []string{"containers/text/tokenizers-js.sh", "containers/onnx/ort.sh"} {
		out, err := exec.Command(filepath.Join(root, s), "--quiet").Output()
		if err != nil {
			b.Skipf("%s: %v (tokenizers.js and onnxruntime-node install on first use; offline, the peer is skipped)", s, err)
		}
		mods = append(mods, strings.TrimSpace(string(out)))
	}
	dir := filepath.Dir(testTok)
	cmd := exec.Command("node", filepath.Join(root, "containers/onnx/embed_bench.js"), testTok, filepath.Join(dir, "tokenizer_config.json"),
		testModel, "64", in, strconv.Itoa(threads), strconv.Itoa(rounds), "16384")
	cmd.Env = append(os.Environ(), "NODE_PATH="+strings.Join(mods, ":"))
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("embed_bench.js: %v", err)
	}
	var r struct {
		Texts      int     `json:"texts"`
		Seconds    float64 `json:"seconds"`
		CPUSeconds float64 `json:"cpu_seconds"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("embed_bench.js: %v: %s", err, out)
	}
	return r.Texts, r.Seconds, r.CPUSeconds
}

// BenchmarkEmbedVsORT embeds 4,000 texts (the test corpus ten times, the
// test encoder, --max_length=64, --max_batch_tokens=16384) with the whole
// pipeline on Beam's local runner (prism, in this process: its start and
// the report included) on one core (GOMAXPROCS 1) and on all, and the same
// work with tokenizers.js + ONNX Runtime (containers/onnx/embed_bench.js,
// intra-op threads 1 and ONNX Runtime's default) in the same run. It
// reports texts per second and per CPU second of each, and
// ratio_to_ort_cpu (this pipeline's texts per CPU second over the peer's)
// and ratio_to_ort_wall; on a loaded machine the CPU ratio is the one to
// read.
func BenchmarkEmbedVsORT(b *testing.B) {
	in, n := benchCorpus(b, 10)
	for _, threads := range []int{1, 0} {
		name := "threads=1"
		if threads == 0 {
			name = "threads=all"
		}
		b.Run(name, func(b *testing.B) {
			if threads == 1 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			}
			cpu0, t0 := cpuSeconds(), time.Now()
			for i := 0; i < b.N; i++ {
				out := b.TempDir()
				setFlags(b, "--model="+testModel, "--tokenizer="+testTok, "--input="+in, "--output="+out, refLength)
				code, err := run(b.Context(), &bytes.Buffer{})
				if err != nil || code != 0 {
					b.Fatalf("embed: status %d: %v", code, err)
				}
			}
			cpu, wall := cpuSeconds()-cpu0, time.Since(t0).Seconds()
			b.StopTimer()
			texts := float64(n * b.N)
			pt, pwall, pcpu := peer(b, in, threads, max(1, b.N))
			b.ReportMetric(texts/wall, "texts/s")
			b.ReportMetric(texts/cpu, "texts/cpu-s")
			b.ReportMetric(float64(pt)/pwall, "ort_texts/s")
			b.ReportMetric(float64(pt)/pcpu, "ort_texts/cpu-s")
			b.ReportMetric((texts/cpu)/(float64(pt)/pcpu), "ratio_to_ort_cpu")
			b.ReportMetric((texts/wall)/(float64(pt)/pwall), "ratio_to_ort_wall")
		})
	}
}
