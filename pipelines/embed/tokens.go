package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/beamgpu/beamgpu/transforms/text/tokenizer"
)

// maxTokenizerBytes bounds tokenizer.json (the largest vocabularies are a
// few tens of MB).
const maxTokenizerBytes = 256 << 20

// tokFiles is a tokenizer as the launcher loaded it: its tokenizer.json
// and tokenizer_config.json ("" when there is none), which the workers
// load again, and what the launcher needs of it.
type tokFiles struct {
	path, cfgPath string
	t             *tokenizer.Tokenizer
	padID         int
}

// loadTokenizer reads tokenizer.json at path (local or gs://) and the
// tokenizer_config.json beside it when present, and loads them (a
// component outside the tokenizer package's set is refused here, naming
// it).
func loadTokenizer(ctx context.Context, path string) (*tokFiles, error) {
	f := &tokFiles{path: path}
	cfgPath := "tokenizer_config.json"
	if i := strings.LastIndex(path, "/"); i >= 0 {
		cfgPath = path[:i+1] + cfgPath
	}
	if ok, err := jobfiles.Exists(ctx, cfgPath); err != nil {
		return nil, fmt.Errorf("%s: %w", cfgPath, err)
	} else if ok {
		f.cfgPath = cfgPath
	}
	var err error
	if f.t, err = readTokenizer(ctx, f.path, f.cfgPath); err != nil {
		return nil, err
	}
	if _, id, ok := f.t.PadToken(); ok {
		f.padID = id
	}
	return f, nil
}

// readTokenizer reads and loads tokenizer.json at path and the
// tokenizer_config.json at cfgPath ("": none).
func readTokenizer(ctx context.Context, path, cfgPath string) (*tokenizer.Tokenizer, error) {
	data, err := files.ReadAll(ctx, path, maxTokenizerBytes)
	if err != nil {
		return nil, err
	}
	if cfgPath == "" {
		return tokenizer.Read(path, bytes.NewReader(data), nil)
	}
	cfg, err := files.ReadAll(ctx, cfgPath, maxTokenizerBytes)
	if err != nil {
		return nil, err
	}
	return tokenizer.Read(path, bytes.NewReader(data), bytes.NewReader(cfg))
}

// maxLength is the truncation length of a run: flag where positive, else
// the tokenizer's truncation, else its model_max_length, else 0 (none).
// A length below the tokenizer's special tokens is an error.
func (f *tokFiles) maxLength(flag int) (int, error) {
	n := flag
	if n == 0 {
		if tr := f.t.Truncation(); tr != nil {
			n = tr.MaxLength
		} else {
			n = f.t.ModelMaxLength()
		}
	}
	if n > 0 {
		if _, err := newEncoder(f.t, n, 0, 0); err != nil {
			return 0, fmt.Errorf("--max_length=%d: %w", n, err)
		}
	}
	return n, nil
}

// encoder tokenizes the texts of a run: truncated to maxLength tokens
// (0: not at all), without padding (the model call pads), counting the
// texts it truncates; or, with chunkTokens > 0, cut into chunks of
// chunkTokens tokens (special tokens included), each overlap tokens into
// the one before (Hugging Face's return_overflowing_tokens with a stride).
type encoder struct {
	// cut truncates to maxLength; probe to maxLength+1, which tells a text
	// that truncation shortens (its encoding is then maxLength+1 long)
	// from one that fits, at the cost of encoding the long texts twice
	// (each a bounded amount of work: a right-truncating tokenizer stops
	// at the limit).
	cut, probe *tokenizer.Tokenizer
	maxLength  int
	// chunks cuts texts into chunks (nil: not chunking).
	chunks *tokenizer.Tokenizer
}

func newEncoder(t *tokenizer.Tokenizer, maxLength, chunkTokens, overlap int) (*encoder, error) {
	t, err := t.WithPadding(nil)
	if err != nil {
		return nil, err
	}
	e := &encoder{cut: t, probe: t, maxLength: maxLength}
	if chunkTokens > 0 {
		tr := tokenizer.Truncation{MaxLength: chunkTokens, Overflowing: true, Stride: overlap}
		if e.chunks, err = t.WithTruncation(&tr); err != nil {
			return nil, err
		}
		if _, _, err := e.encode(strings.Repeat("a ", 4*chunkTokens)); err != nil {
			return nil, err
		}
		return e, nil
	}
	if maxLength <= 0 {
		if e.cut, err = t.WithTruncation(nil); err != nil {
			return nil, err
		}
		e.probe = e.cut
		return e, nil
	}
	tr := tokenizer.Truncation{MaxLength: maxLength}
	if old := t.Truncation(); old != nil {
		tr.Strategy, tr.Left = old.Strategy, old.Left
	}
	if e.cut, err = t.WithTruncation(&tr); err != nil {
		return nil, err
	}
	tr.MaxLength++
	if e.probe, err = t.WithTruncation(&tr); err != nil {
		return nil, err
	}
	if _, _, err := e.encode(""); err != nil {
		return nil, err
	}
	return e, nil
}

// encode tokenizes a text: its encoding, or its chunks' encodings;
// truncated says whether truncation cut it.
func (e *encoder) encode(text string) (encs []*tokenizer.Encoding, truncated bool, err error) {
	if e.chunks != nil {
		enc, err := e.chunks.Encode(text)
		if err != nil {
			return nil, false, err
		}
		encs = append([]*tokenizer.Encoding{enc}, enc.Overflowing...)
		enc.Overflowing = nil
		return encs, false, nil
	}
	enc, err := e.probe.Encode(text)
	if err != nil || e.maxLength <= 0 || enc.Len() <= e.maxLength {
		return []*tokenizer.Encoding{enc}, false, err
	}
	enc, err = e.cut.Encode(text)
	return []*tokenizer.Encoding{enc}, true, err
}
