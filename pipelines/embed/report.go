package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/pipelines/internal/rowparts"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/nd/npy"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// reportFn joins the part files in row order into embeddings.npy and
// embeddings.jsonl, one shard at a time, writes failed.jsonl, and counts
// the texts: in, embedded, failed, their tokens and the truncated ones.
type reportFn struct {
	Output string
	RunID  string
	N      int
	// ShardRows is the rows of a part's shard.
	ShardRows int
	// Hidden is the embedding's size where the model fixes it (0: not
	// fixed), embeddings.npy's width when no text was embedded.
	Hidden int
	// Chunked: texts are cut into chunks, a row each, and
	// embeddings.jsonl names the chunk.
	Chunked bool

	in, embedded, failedRows, failures, tokens, truncated, dims, rowsOut beam.Counter
}

func (f *reportFn) Setup() {
	f.in = beam.NewCounter(stepbeam.Namespace, "texts_in")
	f.embedded = beam.NewCounter(stepbeam.Namespace, "texts_embedded")
	f.failedRows = beam.NewCounter(stepbeam.Namespace, "texts_failed")
	f.failures = beam.NewCounter(stepbeam.Namespace, "failures")
	f.tokens = beam.NewCounter(stepbeam.Namespace, "texts_tokens")
	f.truncated = beam.NewCounter(stepbeam.Namespace, "texts_truncated")
	f.dims = beam.NewCounter(stepbeam.Namespace, "embedding_dimensions")
	f.rowsOut = beam.NewCounter(stepbeam.Namespace, "embedding_rows")
}

func (f *reportFn) ProcessElement(ctx context.Context, _ int, partIter func(*rowparts.Part) bool, failIter func(*step.Failure) bool, _ func(*int) bool) error {
	var parts []rowparts.Part
	var p rowparts.Part
	for partIter(&p) {
		parts = append(parts, p)
		p = rowparts.Part{}
	}
	var failures []step.Failure
	failed := map[int]bool{}
	var fl step.Failure
	for failIter(&fl) {
		failures = append(failures, fl)
		if i, ok := rowOf(fl); ok && i >= 0 && i < f.N {
			failed[i] = true
		}
		fl = step.Failure{}
	}
	shards := rowparts.ByShard(parts)
	rows, hidden, err := f.count(ctx, shards)
	if err != nil {
		return err
	}
	var tokens, truncated int64
	embedded := make([]bool, f.N)
	err = jobfiles.WriteFile(ctx, f.RunID, jobfiles.Join(f.Output, embeddingsFile), func(npyOut io.Writer) error {
		return jobfiles.WriteFile(ctx, f.RunID, jobfiles.Join(f.Output, rowsFile), func(jsonOut io.Writer) error {
			hdr, err := npy.EncodeHeader(nd.Float32, []int{rows, hidden})
			if err != nil {
				return err
			}
			bn, bj := bufio.NewWriterSize(npyOut, 1<<16), bufio.NewWriterSize(jsonOut, 1<<16)
			bn.Write(hdr)
			var line []byte
			for _, ps := range shards {
				recs, err := readShard(ctx, ps, f.ShardRows)
				if err != nil {
					return err
				}
				for _, tr := range recs {
					if tr.row < 0 || tr.row >= f.N {
						return fmt.Errorf("text %d: out of range (%d texts)", tr.row, f.N)
					}
					if !tr.complete() {
						continue // a chunk failed: the text is failed
					}
					embedded[tr.row] = true
					for _, r := range tr.chunks {
						if len(r.Vec) != 4*hidden {
							return fmt.Errorf("text %d: an embedding of %d values, where the first has %d", tr.row, len(r.Vec)/4, hidden)
						}
						tokens += int64(r.Tokens)
						bn.Write(r.Vec)
						line = append(line[:0], `{"id":`...)
						line = append(line, r.ID...)
						if f.Chunked {
							line = append(line, `,"chunk":`...)
							line = strconv.AppendInt(line, int64(r.Chunk), 10)
						}
						line = append(line, `,"embedding":[`...)
						for j := 0; j < hidden; j++ {
							if j > 0 {
								line = append(line, ',')
							}
							line = appendFloat32(line, binary.LittleEndian.Uint32(r.Vec[4*j:]))
						}
						line = append(line, "]}\n"...)
						bj.Write(line)
					}
					if tr.chunks[0].Truncated {
						truncated++
					}
				}
			}
			if err := bn.Flush(); err != nil {
				return err
			}
			return bj.Flush()
		})
	})
	if err != nil {
		return err
	}
	nEmb := 0
	for i, ok := range embedded {
		switch {
		case ok:
			nEmb++
			if failed[i] {
				return fmt.Errorf("text %d: both embedded and failed", i)
			}
		case !failed[i]:
			return fmt.Errorf("text %d: neither embedded nor failed (parts of %s are missing)", i, embeddingsFile)
		}
	}
	if err := jobfiles.WriteFailures(ctx, f.RunID, f.Output, failures); err != nil {
		return err
	}
	for _, p := range parts {
		jobfiles.Remove(ctx, p.Path)
	}
	f.in.Inc(ctx, int64(f.N))
	f.embedded.Inc(ctx, int64(nEmb))
	f.failedRows.Inc(ctx, int64(len(failed)))
	f.failures.Inc(ctx, int64(len(failures)))
	f.tokens.Inc(ctx, tokens)
	f.truncated.Inc(ctx, truncated)
	f.dims.Inc(ctx, int64(hidden))
	f.rowsOut.Inc(ctx, int64(rows))
	return nil
}

// count reads the parts for the rows of embeddings.npy (the chunks of the
// texts whose chunks are all there) and their width (the first row's, else
// Hidden).
func (f *reportFn) count(ctx context.Context, shards [][]rowparts.Part) (rows, width int, err error) {
	width = -1
	for _, ps := range shards {
		recs, err := readShard(ctx, ps, f.ShardRows)
		if err != nil {
			return 0, 0, err
		}
		for _, tr := range recs {
			if tr.complete() {
				rows += len(tr.chunks)
				if width < 0 {
					width = len(tr.chunks[0].Vec) / 4
				}
			}
		}
	}
	if width < 0 {
		width = f.Hidden
	}
	return rows, width, nil
}

// textRecords are the chunk records of a text, in chunk order.
type textRecords struct {
	row    int
	chunks []record
}

// complete reports whether every chunk of the text is there, once.
func (t textRecords) complete() bool {
	if len(t.chunks) == 0 || len(t.chunks) != t.chunks[0].Chunks {
		return false
	}
	for k, r := range t.chunks {
		if r.Chunk != k {
			return false
		}
	}
	return true
}

// readShard reads the records of a shard's parts, the records of a text
// (from one part or several) joined, in row order.
func readShard(ctx context.Context, ps []rowparts.Part, shardRows int) ([]textRecords, error) {
	byRow := map[int][]record{}
	for _, p := range ps {
		base := p.Shard * shardRows
		err := rowparts.Read(ctx, p.Path, func(i int, b []byte) error {
			rs, err := decodeRecords(b)
			if err != nil {
				return fmt.Errorf("%s: %w", p.Path, err)
			}
			byRow[base+i] = append(byRow[base+i], rs...)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]textRecords, 0, len(byRow))
	for row, rs := range byRow {
		sort.Slice(rs, func(a, b int) bool { return rs[a].Chunk < rs[b].Chunk })
		out = append(out, textRecords{row: row, chunks: rs})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].row < out[b].row })
	return out, nil
}

// appendFloat32 appends the float32 of bits as JSON: the shortest decimal
// that reads back as the same float32.
func appendFloat32(b []byte, bits uint32) []byte {
	return strconv.AppendFloat(b, float64(math.Float32frombits(bits)), 'g', -1, 32)
}

// rowOf is the text a failure names: "file:line[index]" (or "#index").
func rowOf(fl step.Failure) (int, bool) {
	in := fl.Input
	if len(in) > 1 && in[0] == '#' {
		i, err := strconv.Atoi(in[1:])
		return i, err == nil
	}
	if !strings.HasSuffix(in, "]") {
		return 0, false
	}
	k := strings.LastIndexByte(in, '[')
	if k < 0 {
		return 0, false
	}
	i, err := strconv.Atoi(in[k+1 : len(in)-1])
	return i, err == nil
}

// summary is summary.json and the end-of-run report.
type summary struct {
	Run struct {
		ID      string   `json:"id"`
		Started string   `json:"started,omitempty"`
		Args    []string `json:"args,omitempty"`
	} `json:"run"`
	Model     string `json:"model"`
	Tokenizer string `json:"tokenizer"`
	Input     string `json:"input"`
	Output    string `json:"output"`
	// Texts: in = embedded + failed.
	TextsIn       int `json:"texts_in"`
	TextsEmbedded int `json:"texts_embedded"`
	TextsFailed   int `json:"texts_failed"`
	// Failures counts the lines of failed.jsonl.
	Failures int `json:"failures"`
	// Tokens are the embedded texts' tokens (after truncation, special
	// tokens included); TextsTruncated the texts cut to MaxLength.
	Tokens         int64 `json:"tokens"`
	TextsTruncated int64 `json:"texts_truncated"`
	MaxLength      int   `json:"max_length"`
	Dimensions     int   `json:"dimensions"`
	// Rows are embeddings.npy's rows: the embedded texts, or their chunks
	// with --chunk_tokens (ChunkTokens, ChunkOverlap).
	Rows         int    `json:"rows"`
	ChunkTokens  int    `json:"chunk_tokens,omitempty"`
	ChunkOverlap int    `json:"chunk_overlap,omitempty"`
	Pooling      string `json:"pooling"`
	Normalized   bool   `json:"normalized"`
	// PaddedTokens are the tokens of the model calls as padded (texts x
	// padded length); PaddingShare is 1 - tokens/padded tokens.
	PaddedTokens int64   `json:"padded_tokens"`
	PaddingShare float64 `json:"padding_share"`
	// Retries counts the model calls made again on half of a call that
	// failed, to find the texts that fail alone.
	Retries         int64   `json:"retries"`
	ElapsedSeconds  float64 `json:"elapsed_seconds"`
	TokensPerSecond float64 `json:"tokens_per_second"`
	TextsPerSecond  float64 `json:"texts_per_second"`
	// Backend is each step's implementation (cpu, gpu, stub) and counts.
	Backend []stepJSON `json:"backend"`
	// Stub is set when steps ran their stand-ins: the embeddings are zeros.
	Stub      bool     `json:"stub"`
	StubSteps []string `json:"stub_steps,omitempty"`
}

type stepJSON struct {
	Step      string `json:"step"`
	Impl      string `json:"impl"`
	Batches   int64  `json:"batches"`
	Rows      int64  `json:"rows"`
	Failures  int64  `json:"failures"`
	Fallbacks int64  `json:"cpu_fallbacks"`
}

// report prints the summary of a run of cfg, writes summary.json, and
// checks that the counts reconcile.
func report(ctx context.Context, w io.Writer, res *job.Result, cfg Config) (summary, error) {
	m := res.Metrics
	var sum summary
	sum.Run.ID, sum.Run.Started, sum.Run.Args = cfg.RunID, cfg.Started, cfg.Args
	sum.Model, sum.Tokenizer, sum.Input, sum.Output = cfg.Model, cfg.Tokenizer, cfg.Input, cfg.Output
	sum.TextsIn, sum.TextsEmbedded = int(m.Counters["texts_in"]), int(m.Counters["texts_embedded"])
	sum.TextsFailed, sum.Failures = int(m.Counters["texts_failed"]), int(m.Counters["failures"])
	sum.Tokens, sum.TextsTruncated = m.Counters["texts_tokens"], m.Counters["texts_truncated"]
	sum.MaxLength, sum.Pooling, sum.Normalized = cfg.MaxLength, cfg.Pooling, cfg.Normalize
	sum.Dimensions = int(m.Counters["embedding_dimensions"])
	sum.Rows = int(m.Counters["embedding_rows"])
	sum.ChunkTokens, sum.ChunkOverlap = cfg.ChunkTokens, cfg.ChunkOverlap
	sum.PaddedTokens = m.Counters["runinference."+inference.MetricPaddedTokens]
	if tok := m.Counters["runinference."+inference.MetricTokens]; sum.PaddedTokens > 0 {
		sum.PaddingShare = 1 - float64(tok)/float64(sum.PaddedTokens)
	}
	sum.Retries = m.Counters["runinference."+inference.MetricRetries]
	sum.ElapsedSeconds = res.Elapsed.Seconds()
	if s := res.Elapsed.Seconds(); s > 0 {
		sum.TokensPerSecond = float64(sum.Tokens) / s
		sum.TextsPerSecond = float64(sum.TextsEmbedded) / s
	}
	var steps []job.StepCounts
	seen := map[string]bool{}
	for _, st := range m.Steps {
		if !seen[st.Step] {
			seen[st.Step] = true
			if cfg.Impl != "" {
				st.Impl = cfg.Impl
			}
			steps = append(steps, st)
		}
	}
	m.Steps = steps
	for _, st := range m.Steps {
		sum.Backend = append(sum.Backend, stepJSON{Step: st.Step, Impl: string(st.Impl), Batches: st.Batches, Rows: st.Items,
			Failures: st.Failures, Fallbacks: st.Fallbacks})
	}
	sum.Stub, sum.StubSteps = len(res.Stub) > 0, res.Stub
	m.PrintSteps(w, "texts")
	how := fmt.Sprintf("%d truncated to %d tokens", sum.TextsTruncated, sum.MaxLength)
	if cfg.ChunkTokens > 0 {
		how = fmt.Sprintf("%d rows: chunks of %d tokens, %d overlapping", sum.Rows, cfg.ChunkTokens, cfg.ChunkOverlap)
	} else if sum.MaxLength == 0 {
		how = "not truncated"
	}
	fmt.Fprintf(w, "texts: %d in, %d embedded, %d failed (%s); %d tokens padded to %d (%.1f%% padding), %.0f tokens/s; %d failures in %s; %s; outputs in %s\n",
		sum.TextsIn, sum.TextsEmbedded, sum.TextsFailed, how, sum.Tokens, sum.PaddedTokens, 100*sum.PaddingShare,
		sum.TokensPerSecond, sum.Failures, jobfiles.FailedFile, res.Elapsed.Round(time.Millisecond), cfg.Output)
	if err := jobfiles.WriteJSON(ctx, cfg.RunID, jobfiles.Join(cfg.Output, summaryFile), sum); err != nil {
		return sum, err
	}
	if sum.TextsIn != cfg.Rows() || sum.TextsIn != sum.TextsEmbedded+sum.TextsFailed {
		return sum, fmt.Errorf("counts do not reconcile: %d texts in the input, %d reported, %d embedded + %d failed", cfg.Rows(), sum.TextsIn, sum.TextsEmbedded, sum.TextsFailed)
	}
	if sum.TextsIn == 0 && !cfg.AllowEmpty {
		return sum, fmt.Errorf("no texts: the input %s holds none (--allow_empty accepts that)", cfg.Input)
	}
	if cfg.Strict && sum.Failures > 0 {
		return sum, fmt.Errorf("--strict: %d failures (%d of %d texts failed); see %s", sum.Failures, sum.TextsFailed, sum.TextsIn, jobfiles.Join(cfg.Output, jobfiles.FailedFile))
	}
	return sum, nil
}
