package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// loader holds what the constructors of the components need: the name of
// the file for error messages and tokenizer_config.json's settings.
type loader struct {
	name   string
	config tokenizerConfig
}

// tokenizerConfig is the part of tokenizer_config.json this package reads.
type tokenizerConfig struct {
	// ModelMaxLength is the longest input the model takes
	// (model_max_length); 0 when absent. Hugging Face writes a huge
	// number (1e30) for "no limit"; that is 0 here too.
	ModelMaxLength int
	EOSToken       string
	PadToken       string
	// CleanUpSpaces is clean_up_tokenization_spaces (true when absent, as
	// tokenizers.js has it): Decode removes the spaces before punctuation.
	CleanUpSpaces bool
}

// fileJSON is the top level of tokenizer.json.
type fileJSON struct {
	Version       string           `json:"version"`
	Truncation    *truncationJSON  `json:"truncation"`
	Padding       *paddingJSON     `json:"padding"`
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	Model         json.RawMessage  `json:"model"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
}

type addedTokenJSON struct {
	ID         *int   `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"`
	Special    bool   `json:"special"`
}

type truncationJSON struct {
	Direction string `json:"direction"`
	MaxLength int    `json:"max_length"`
	Strategy  string `json:"strategy"`
	Stride    int    `json:"stride"`
}

type paddingJSON struct {
	Strategy        json.RawMessage `json:"strategy"`
	Direction       string          `json:"direction"`
	PadToMultipleOf *int            `json:"pad_to_multiple_of"`
	PadID           int             `json:"pad_id"`
	PadTypeID       int             `json:"pad_type_id"`
	PadToken        string          `json:"pad_token"`
}

// LoadFile loads a tokenizer from a Hugging Face tokenizer.json file, and
// from the tokenizer_config.json beside it when there is one (its
// model_max_length becomes the default truncation length when
// tokenizer.json sets none).
func LoadFile(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	cfgPath := filepath.Join(filepath.Dir(path), "tokenizer_config.json")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		cfg, cfgPath = nil, ""
	}
	return parse(path, data, cfgPath, cfg)
}

// Read loads a tokenizer from the text of a tokenizer.json (r) and of its
// tokenizer_config.json (config; nil when there is none). name names the
// input in error messages.
func Read(name string, r io.Reader, config io.Reader) (*Tokenizer, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", name, err)
	}
	var cfg []byte
	cfgName := ""
	if config != nil {
		if cfg, err = io.ReadAll(config); err != nil {
			return nil, fmt.Errorf("tokenizer: %s's tokenizer_config.json: %w", name, err)
		}
		cfgName = name + "'s tokenizer_config.json"
	}
	return parse(name, data, cfgName, cfg)
}

// jsonError describes a JSON syntax or type error with the line and column
// of its offset.
func jsonError(name string, data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return fmt.Errorf("tokenizer: %s: %w", name, err)
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Errorf("tokenizer: %s:%d:%d (byte %d): invalid JSON: %w", name, line, col, off, err)
}

func parse(name string, data []byte, cfgName string, cfgData []byte) (*Tokenizer, error) {
	l := &loader{name: name}
	l.config.CleanUpSpaces = true
	if cfgData != nil {
		var cfg map[string]json.RawMessage
		if err := json.Unmarshal(cfgData, &cfg); err != nil {
			return nil, jsonError(cfgName, cfgData, err)
		}
		if raw, ok := cfg["model_max_length"]; ok && !isNull(raw) {
			var f float64
			if err := json.Unmarshal(raw, &f); err != nil {
				return nil, fmt.Errorf("tokenizer: %s: model_max_length: %v", cfgName, err)
			}
			if f > 0 && f < 1<<31 {
				l.config.ModelMaxLength = int(f)
			}
		}
		if raw, ok := cfg["clean_up_tokenization_spaces"]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, &l.config.CleanUpSpaces); err != nil {
				return nil, fmt.Errorf("tokenizer: %s: clean_up_tokenization_spaces: %v", cfgName, err)
			}
		}
		l.config.EOSToken = configToken(cfg["eos_token"])
		l.config.PadToken = configToken(cfg["pad_token"])
	}
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, jsonError(name, data, err)
	}
	t := &Tokenizer{name: name}
	var err error
	if isNull(f.Model) {
		return nil, fmt.Errorf("tokenizer: %s: no model", name)
	}
	if t.model, err = l.model("model", f.Model); err != nil {
		return nil, prefix(err)
	}
	if !isNull(f.Normalizer) {
		if t.normalizer, err = l.normalizer("normalizer", f.Normalizer); err != nil {
			return nil, prefix(err)
		}
	}
	if !isNull(f.PreTokenizer) {
		if t.preTokenizer, err = l.preTokenizer("pre_tokenizer", f.PreTokenizer); err != nil {
			return nil, prefix(err)
		}
	}
	if !isNull(f.PostProcessor) {
		if t.postProcessor, err = l.postProcessor("post_processor", f.PostProcessor); err != nil {
			return nil, prefix(err)
		}
	}
	if !isNull(f.Decoder) {
		if t.decoder, err = l.decoder("decoder", f.Decoder); err != nil {
			return nil, prefix(err)
		}
	}
	if err := t.setAddedTokens(l, f.AddedTokens); err != nil {
		return nil, prefix(err)
	}
	if f.Truncation != nil {
		tr, err := f.Truncation.parse(name)
		if err != nil {
			return nil, prefix(err)
		}
		t.truncation = tr
	} else if l.config.ModelMaxLength > 0 {
		t.truncation = &Truncation{MaxLength: l.config.ModelMaxLength}
	}
	if f.Padding != nil {
		p, err := f.Padding.parse(name)
		if err != nil {
			return nil, prefix(err)
		}
		t.padding = p
	}
	t.modelMaxLength = l.config.ModelMaxLength
	t.cleanUpSpaces = l.config.CleanUpSpaces
	t.padToken = l.config.PadToken
	_, preCuts := t.preTokenizer.(cutter)
	_, normCuts := t.normalizer.(cutter)
	t.chunkable = preCuts && (t.normalizer == nil || normCuts) && !t.added.hasNormalized
	return t, nil
}

// configToken reads a special token of tokenizer_config.json: a string, or
// an object with its "content".
func configToken(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Content
	}
	return ""
}

func prefix(err error) error {
	if strings.HasPrefix(err.Error(), "tokenizer: ") {
		return err
	}
	return fmt.Errorf("tokenizer: %w", err)
}

func (j *truncationJSON) parse(name string) (*Truncation, error) {
	t := &Truncation{MaxLength: j.MaxLength, Stride: j.Stride}
	switch j.Strategy {
	case "", "LongestFirst":
		t.Strategy = LongestFirst
	case "OnlyFirst":
		t.Strategy = OnlyFirst
	case "OnlySecond":
		t.Strategy = OnlySecond
	default:
		return nil, fmt.Errorf("%s: truncation.strategy: unknown strategy %q (LongestFirst, OnlyFirst, OnlySecond)", name, j.Strategy)
	}
	switch j.Direction {
	case "", "Right":
		t.Left = false
	case "Left":
		t.Left = true
	default:
		return nil, fmt.Errorf("%s: truncation.direction: unknown direction %q (Left, Right)", name, j.Direction)
	}
	if t.MaxLength <= 0 {
		return nil, fmt.Errorf("%s: truncation.max_length: %d, want > 0", name, t.MaxLength)
	}
	return t, nil
}

func (j *paddingJSON) parse(name string) (*Padding, error) {
	p := &Padding{PadID: j.PadID, PadTypeID: j.PadTypeID, PadToken: j.PadToken}
	if j.PadToMultipleOf != nil {
		p.PadToMultipleOf = *j.PadToMultipleOf
	}
	var s string
	if err := json.Unmarshal(j.Strategy, &s); err == nil {
		if s != "BatchLongest" {
			return nil, fmt.Errorf("%s: padding.strategy: unknown strategy %q (\"BatchLongest\" or {\"Fixed\": N})", name, s)
		}
	} else {
		var fixed struct {
			Fixed *int `json:"Fixed"`
		}
		if err := json.Unmarshal(j.Strategy, &fixed); err != nil || fixed.Fixed == nil || *fixed.Fixed <= 0 {
			return nil, fmt.Errorf("%s: padding.strategy: %s, want \"BatchLongest\" or {\"Fixed\": N > 0}", name, j.Strategy)
		}
		p.Length = *fixed.Fixed
	}
	switch j.Direction {
	case "", "Right":
	case "Left":
		p.Left = true
	default:
		return nil, fmt.Errorf("%s: padding.direction: unknown direction %q (Left, Right)", name, j.Direction)
	}
	return p, nil
}
