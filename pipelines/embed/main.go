// Command embed computes text embeddings on Apache Beam: it tokenizes each
// text with a Hugging Face tokenizer (transforms/text/tokenizer), runs a
// sentence-transformers-style ONNX encoder on the tokens, batched by length
// and padded (transforms/inference), pools its token output over the
// attention mask and writes one vector per text, in the input's order.
//
//	go run ./pipelines/embed --model=M.onnx --tokenizer=tokenizer.json --input=corpus.jsonl --output=DIR \
//	    [--text_field=text] [--id_field=id] [--max_length=N] [--pooling=mean|cls] [--normalize=true] [--backend=auto|cpu|gpu|stub]
//
// The input is JSONL (one object a line: the text in --text_field, the id
// in --id_field) or plain text (one document a line), local or on any Beam
// filesystem (gs://), gzip where the name ends in .gz, one file or a glob
// of files (rows in the order of the sorted file names, then lines). Each
// text is tokenized (truncated to --max_length tokens, or the tokenizer's
// own truncation or model_max_length) and fed to the model's inputs by
// name: input_ids, attention_mask and, where the model has it,
// token_type_ids. The model's token output (its first output of rank 3,
// [batch, sequence, hidden], or --token_output) is pooled over the tokens
// the attention mask keeps: their mean, or the first token (--pooling=cls);
// the result is L2-normalised unless --normalize=false. It writes, in
// --output and nowhere else:
//
//	embeddings.npy    float32 [embedded, hidden]: the embedded texts' vectors, in input order
//	embeddings.jsonl  {"id", "embedding"} per embedded text, the same rows in the same order
//
// With --chunk_tokens a text is cut into chunks of that many tokens, each
// --chunk_overlap tokens into the one before, instead of being truncated:
// a row per chunk, in text and chunk order, and {"id", "chunk",
// "embedding"} in embeddings.jsonl.
//
//	summary.json      texts in, embedded, failed (in = embedded + failed), tokens, truncated texts,
//	                  tokens per second, padding, backend per step, elapsed
//	failed.jsonl      one failure a line: the row ("#index"), step and reason naming file and line
//
// A text that is not valid UTF-8, a line that is not a JSON object, a
// missing or non-string text field, a text the tokenizer makes no tokens
// of, a line over --max_line_bytes and a model call that fails alone each
// fail their text and nothing else (a failed model call is retried in
// halves). Memory is bounded as in pipelines/infer: each worker reads,
// tokenizes, embeds and writes a shard of --shard_rows texts, and the
// report joins the shards' part files in order. See docs/embed.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/pipelines/internal/lines"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/runtime/backend"
	_ "github.com/beamgpu/beamgpu/stubs/onnx"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/files"
)

var (
	model      = flag.String("model", "", "the ONNX encoder (local or gs://): inputs input_ids, attention_mask and optionally token_type_ids, [batch, sequence]; required")
	tokFile    = flag.String("tokenizer", "", "the Hugging Face tokenizer.json (local or gs://); tokenizer_config.json beside it is read when present; required")
	input      = flag.String("input", "", "the texts: a JSONL file (.jsonl, .jsonl.gz) of one object a line, or plain text (any other name; .gz: gzip) of one document a line; a glob of such files ('texts/*.jsonl.gz', gs://b/x/*.txt); required")
	output     = flag.String("output", "out/embed", "output directory (or gs:// prefix): embeddings.npy, embeddings.jsonl, summary.json, failed.jsonl")
	textField  = flag.String("text_field", "text", "JSONL: the field holding the text (a string)")
	idField    = flag.String("id_field", "id", "JSONL: the field holding the text's id, copied to embeddings.jsonl as it is (any JSON value); a line without it (and plain text) has its row number, from 0, as id")
	maxLength  = flag.Int("max_length", 0, "the most tokens of a text, special tokens included: a longer text is truncated (counted in summary.json); 0: the tokenizer's truncation, else its model_max_length (tokenizer_config.json), else no limit")
	pooling    = flag.String("pooling", "mean", "how a text's token vectors become one: mean (the mean over the tokens the attention mask keeps, as sentence-transformers' default) or cls (the first token's)")
	normalize  = flag.Bool("normalize", true, "L2-normalise each embedding (cosine similarity is then a dot product); --normalize=false keeps the pooled vector")
	chunkToks  = flag.Int("chunk_tokens", 0, "cut each text into chunks of at most this many tokens (special tokens included), an embedding row each, instead of truncating it; embeddings.jsonl then names the chunk: {\"id\", \"chunk\", \"embedding\"} (0: no chunks, texts are truncated to --max_length)")
	chunkOver  = flag.Int("chunk_overlap", 0, "with --chunk_tokens: how many tokens each chunk repeats from the end of the one before (less than --chunk_tokens minus the special tokens)")
	tokenOut   = flag.String("token_output", "", "the model output holding the token vectors, [batch, sequence, hidden] (default: the model's first output of rank 3)")
	shardRows  = flag.Int("shard_rows", 1024, "texts per read shard (the unit of parallelism; a worker holds one shard's embeddings at most)")
	maxBatch   = flag.Int("max_batch_size", 256, "most texts per model call")
	maxTokens  = flag.Int("max_batch_tokens", 16384, "the most texts x padded length per model call (0: no bound but --max_batch_size); a text longer than that alone is a call of its own")
	window     = flag.Int("sort_window", inference.DefaultLengthWindow, "texts sorted by length together before they are cut into batches (so that a batch's texts have near lengths); a worker holds this many texts")
	maxLine    = flag.Int("max_line_bytes", 16<<20, "the longest input line, in bytes: a longer one is its text's failure, read past without being held")
	callLimit  = flag.Duration("call_timeout", inference.DefaultCallTimeout, "longest one model call may run on a worker's CPU, e.g. 90s or 30m: a call past it fails, its texts to failed.jsonl naming the node, and the run goes on (0: no limit)")
	memBudget  = flag.String("memory_budget", "", "most memory one model call may allocate on a worker's CPU, e.g. 4GiB: a call over it fails, its texts to failed.jsonl, and the run goes on (empty: $"+onnx.EnvMemoryBudget+" where set, else the worker's memory available)")
	strict     = flag.Bool("strict", false, "exit with status 1 if any text failed (failures are always listed in failed.jsonl)")
	allowEmpty = flag.Bool("allow_empty", false, "accept an input without texts as a success (without it, no texts is an error)")

	// flags are package job's: backend selection, the launcher's, --progress.
	flags job.Flags
)

func init() { flags.Register(flag.CommandLine) }

func main() { job.Main(pipeline(configFromFlags, new(summary))) }

// run runs the pipeline of the (parsed) flags, prints its summary to out
// and returns the exit status.
func run(ctx context.Context, out io.Writer) (int, error) {
	return job.RunMain(ctx, pipeline(configFromFlags, new(summary)), out)
}

// execute builds and runs the pipeline of cfg with sel and prints the summary.
func execute(ctx context.Context, cfg Config, sel *backend.Selector, out io.Writer) (summary, error) {
	var sum summary
	if cfg.RunID == "" {
		cfg.RunID = jobfiles.NewRunID()
	}
	_, err := job.Execute(ctx, pipeline(func(context.Context) (Config, error) { return cfg, nil }, &sum), sel, out)
	return sum, err
}

// pipeline is the pipeline of the configuration configure returns; a run's
// summary goes to sum.
func pipeline(configure func(context.Context) (Config, error), sum *summary) job.Pipeline {
	var cfg Config
	return job.Pipeline{
		Name:  "embed",
		Usage: usage,
		OwnFlags: []string{"model", "tokenizer", "input", "output", "text_field", "id_field", "max_length", "pooling",
			"normalize", "chunk_tokens", "chunk_overlap", "token_output", "shard_rows", "max_batch_size", "max_batch_tokens", "sort_window",
			"max_line_bytes", "call_timeout", "memory_budget", "strict", "allow_empty"},
		Flags: &flags,
		Steps: job.Steps(onnxstep.StepRun),
		WorkerPaths: func() []job.Path {
			return []job.Path{{Flag: "model", Path: *model}, {Flag: "tokenizer", Path: *tokFile}, {Flag: "output", Path: *output}, {Flag: "input", Path: *input}}
		},
		Build: func(ctx context.Context, s beam.Scope, r *job.Run) error {
			c, err := configure(ctx)
			if err != nil {
				return err
			}
			c.Steps = append(c.Steps, r.Options()...)
			d, err := step.ResolveUse(onnxstep.StepRun, c.Handler.Use(), c.Steps...)
			if err != nil {
				return err
			}
			c.Impl = d.Impl
			if err := c.output().Claim(ctx, r); err != nil {
				return err
			}
			cfg = c
			return Build(ctx, s, cfg)
		},
		Report: func(ctx context.Context, w io.Writer, res *job.Result) error {
			var err error
			*sum, err = report(ctx, w, res, cfg)
			return err
		},
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `embed: text embeddings with an ONNX encoder and a Hugging Face tokenizer on Apache Beam.

Usage: embed --model=M.onnx --tokenizer=tokenizer.json --input=TEXTS.jsonl|TEXTS.txt|'GLOB' [--output=DIR]
             [--text_field=text] [--id_field=id] [--max_length=N] [--pooling=mean|cls] [--normalize=true]
             [--backend=auto|cpu|gpu|stub] [flags] [Beam flags]

Each text (a JSONL line's --text_field, or a line of plain text) is tokenized
(truncated to --max_length tokens), fed to the model's inputs by name
(input_ids, attention_mask, token_type_ids where the model has it) in
batches of texts of near length (sorted within --sort_window texts, at most
--max_batch_size texts and --max_batch_tokens texts x padded length),
padded with the tokenizer's pad id, and the model's token output pooled
over the attention mask (mean, or the first token with --pooling=cls) and
L2-normalised (unless --normalize=false).

Writes in --output: embeddings.npy (float32 [embedded, hidden], rows in
input order), embeddings.jsonl ({"id", "embedding"}, the same rows),
summary.json (texts in, embedded, failed, tokens, truncated, tokens per
second) and failed.jsonl (a text that is not valid UTF-8, a line that is
not a JSON object, a missing text field, a text of no tokens, a model call
that fails alone: each naming file and line). Paths are local or gs://.

Examples:
  embed --model=all-MiniLM-L6-v2.onnx --tokenizer=tokenizer.json --input=corpus.jsonl --output=out/emb
  embed --model=enc.onnx --tokenizer=tokenizer.json --input='gs://b/texts/*.jsonl.gz' --text_field=body --id_field=doc_id --output=gs://b/emb
  embed --model=enc.onnx --tokenizer=tokenizer.json --input=lines.txt --max_length=128 --pooling=cls --backend=stub

It runs on Beam's local runner (prism) unless --runner says otherwise; the
model's step is "onnx" (--backend_override=onnx=cpu). See docs/embed.md.
`)
}

// configFromFlags checks the flags, loads the tokenizer and the model,
// lists and counts the input's texts, and checks the model's inputs and
// token output.
func configFromFlags(ctx context.Context) (Config, error) {
	cfg := Config{Model: *model, Tokenizer: *tokFile, Output: *output, ShardRows: *shardRows,
		TextField: *textField, IDField: *idField, Pooling: *pooling, Normalize: *normalize,
		MaxLineBytes: *maxLine, RunID: jobfiles.NewRunID(), Started: time.Now().UTC().Format(time.RFC3339),
		Args: os.Args[1:], AllowEmpty: *allowEmpty, Strict: *strict, Input: *input}
	if cfg.Model == "" || cfg.Tokenizer == "" || *input == "" {
		return cfg, errors.New("--model, --tokenizer and --input are required (embed --help shows examples)")
	}
	if cfg.ShardRows <= 0 || *maxBatch <= 0 || *maxTokens < 0 || *window <= 0 || *maxLength < 0 || *maxLine <= 0 {
		return cfg, fmt.Errorf("--shard_rows=%d --max_batch_size=%d --max_batch_tokens=%d --sort_window=%d --max_length=%d --max_line_bytes=%d: want positive sizes (0 allowed for --max_batch_tokens and --max_length)",
			*shardRows, *maxBatch, *maxTokens, *window, *maxLength, *maxLine)
	}
	if cfg.Pooling != poolMean && cfg.Pooling != poolCLS {
		return cfg, fmt.Errorf("--pooling=%s: want mean or cls", cfg.Pooling)
	}
	if cfg.TextField == "" {
		return cfg, errors.New("--text_field: want a field name")
	}
	cfg.Lengths = inference.LengthBatching{MaxBatchSize: *maxBatch, MaxBatchTokens: *maxTokens, Window: *window}
	tok, err := loadTokenizer(ctx, cfg.Tokenizer)
	if err != nil {
		return cfg, fmt.Errorf("--tokenizer: %w", err)
	}
	cfg.TokenizerConfig = tok.cfgPath
	if *chunkToks < 0 || *chunkOver < 0 || (*chunkToks == 0 && *chunkOver > 0) || (*chunkToks > 0 && *maxLength > 0) {
		return cfg, fmt.Errorf("--chunk_tokens=%d --chunk_overlap=%d --max_length=%d: want chunks of a positive size and an overlap of 0 or more, or no chunks; chunks are not truncated (--max_length)", *chunkToks, *chunkOver, *maxLength)
	}
	if *chunkToks > 0 {
		cfg.ChunkTokens, cfg.ChunkOverlap = *chunkToks, *chunkOver
		if _, err := newEncoder(tok.t, 0, cfg.ChunkTokens, cfg.ChunkOverlap); err != nil {
			return cfg, fmt.Errorf("--chunk_tokens=%d --chunk_overlap=%d: %w", cfg.ChunkTokens, cfg.ChunkOverlap, err)
		}
	} else if cfg.MaxLength, err = tok.maxLength(*maxLength); err != nil {
		return cfg, err
	}
	var opts []inference.ONNXOption
	if *callLimit < 0 {
		return cfg, fmt.Errorf("--call_timeout=%v: want a duration of 0 (no limit) or more, e.g. 10m", *callLimit)
	}
	if *callLimit > 0 {
		opts = append(opts, inference.CallTimeout(*callLimit))
	}
	if *memBudget != "" {
		n, err := onnx.ParseBytes(*memBudget)
		if err != nil || n <= 0 {
			return cfg, fmt.Errorf("--memory_budget=%s: want a positive amount of memory, e.g. 4GiB", *memBudget)
		}
		opts = append(opts, inference.MemoryBudget(n))
	}
	// input_ids are padded with the tokenizer's pad id; the masks and
	// token types with 0.
	opts = append(opts, inference.PadRows(map[string]float64{inputIDs: float64(tok.padID)}))
	if cfg.Handler, err = inference.ONNX(ctx, cfg.Model, opts...); err != nil {
		return cfg, fmt.Errorf("--model: %w", err)
	}
	m := cfg.Handler.Model()
	if cfg.Inputs, err = modelInputs(m, cfg.Model); err != nil {
		return cfg, err
	}
	if cfg.TokenOutput, cfg.Hidden, err = tokenOutput(m, cfg.Model, *tokenOut); err != nil {
		return cfg, err
	}
	if cfg.Files, err = listInputs(ctx, *input); err != nil {
		return cfg, err
	}
	for _, f := range cfg.Files {
		info, err := lines.Scan(ctx, f, cfg.ShardRows)
		if err != nil {
			return cfg, fmt.Errorf("--input: %w", err)
		}
		cfg.Scans = append(cfg.Scans, *info)
	}
	return cfg, nil
}

// The model inputs embed feeds.
const (
	inputIDs      = "input_ids"
	attentionMask = "attention_mask"
	tokenTypeIDs  = "token_type_ids"
)

// modelInputs checks that the model takes input_ids and attention_mask
// (and perhaps token_type_ids), integers of [batch, sequence], and nothing
// else; it returns their names in the model's order.
func modelInputs(m *onnx.Model, path string) ([]string, error) {
	var names []string
	has := map[string]bool{}
	for _, v := range m.Inputs {
		switch v.Name {
		case inputIDs, attentionMask, tokenTypeIDs:
		default:
			return nil, fmt.Errorf("--model %s: input %s is none that embed feeds (input_ids, attention_mask, token_type_ids)", path, v)
		}
		if v.Type.IsFloat() || v.Type == nd.Bool || !v.Type.Supported() {
			return nil, fmt.Errorf("--model %s: input %s is not integers (token ids and masks are)", path, v)
		}
		if v.Shape != nil && len(v.Shape) != 2 {
			return nil, fmt.Errorf("--model %s: input %s is not [batch, sequence]", path, v)
		}
		names = append(names, v.Name)
		has[v.Name] = true
	}
	if !has[inputIDs] {
		return nil, fmt.Errorf("--model %s takes no input_ids (its inputs: %s)", path, inputList(m))
	}
	if !m.Batched() {
		return nil, fmt.Errorf("--model %s: its inputs have a fixed batch size (%s); export it with a dynamic batch axis", path, inputList(m))
	}
	return names, nil
}

// tokenOutput finds the model's token output: the one named, or the first
// of rank 3; and its hidden size (0: not fixed).
func tokenOutput(m *onnx.Model, path, name string) (string, int, error) {
	for _, o := range m.Outputs {
		if (name == "" && len(o.Shape) == 3) || (name != "" && o.Name == name) {
			if len(o.Shape) != 3 {
				return "", 0, fmt.Errorf("--token_output %s: the model %s's output %s is not [batch, sequence, hidden]", name, path, o)
			}
			if !o.Type.IsFloat() {
				return "", 0, fmt.Errorf("--model %s: the token output %s is not floats", path, o)
			}
			return o.Name, max(o.Shape[2].Size, 0), nil
		}
	}
	var outs []string
	for _, o := range m.Outputs {
		outs = append(outs, o.String())
	}
	if name != "" {
		return "", 0, fmt.Errorf("--token_output %s: the model %s has no such output (its outputs: %s)", name, path, strings.Join(outs, "; "))
	}
	return "", 0, fmt.Errorf("--model %s has no output of rank 3, [batch, sequence, hidden] (its outputs: %s): name the token output with --token_output", path, strings.Join(outs, "; "))
}

func inputList(m *onnx.Model) string {
	var s []string
	for _, v := range m.Inputs {
		s = append(s, v.String())
	}
	return strings.Join(s, "; ")
}

// listInputs lists the files of --input: one file, or a glob's, sorted.
func listInputs(ctx context.Context, glob string) ([]string, error) {
	if !strings.ContainsAny(glob, "*?[") {
		return []string{glob}, nil
	}
	found, err := files.List(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("--input %s: %w", glob, err)
	}
	var out []string
	for _, f := range found {
		if strings.HasSuffix(f, "/") {
			continue
		}
		if !strings.Contains(f, "://") {
			if st, err := os.Stat(f); err == nil && st.IsDir() {
				continue
			}
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--input %s: no files match", glob)
	}
	sort.Strings(out)
	return out, nil
}
