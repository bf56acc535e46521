package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// The plug-in points. Each component of tokenizer.json is one of these,
// built from its JSON object by the constructor registered for its "type"
// (see EXTENDING.md). Components are immutable once built and are shared by
// every goroutine that encodes with the tokenizer: they must keep no state
// between calls.

// normalizer changes the text before it is split, in place, keeping the
// alignment to the original through n.Edit().
type normalizer interface {
	normalize(n *NormalizedString)
}

// preTokenizer cuts the text into words (pre-tokens); the model tokenizes
// each word on its own. It may also edit the pieces (ByteLevel, Metaspace).
type preTokenizer interface {
	preTokenize(p *preTokenized)
}

// preTokenized is the text of one section (the text between two added
// tokens) being cut into words.
type preTokenized struct {
	splits []NormalizedString
	// section is the index of this section among the sections of the
	// input that are not added tokens (Metaspace's prepend_scheme "first"
	// uses it).
	section int
	scratch []NormalizedString
}

// splitEach replaces every split by the pieces f appends to out (f may
// append the split itself to keep it, or edit it first).
func (p *preTokenized) splitEach(f func(n *NormalizedString, out []NormalizedString) []NormalizedString) {
	out := p.scratch[:0]
	for i := range p.splits {
		out = f(&p.splits[i], out)
	}
	p.scratch = p.splits[:0]
	p.splits = out
}

// cutter is implemented by the normalizers and pre-tokenizers whose result
// is the same when their text is cut right before any character for which
// cutBefore is true and the pieces are processed one after the other
// (BertPreTokenizer at white space and punctuation, BertNormalizer at
// white space and most ASCII punctuation). When both the normalizer and
// the pre-tokenizer are cutters, a huge text that is truncated anyway is
// encoded a chunk at a time and only until the limit. Implementing it is
// optional.
type cutter interface {
	cutBefore(r rune) bool
}

// Token is one token the model found in a word: its id, its text as in the
// vocabulary, and the byte range [Start, End) of the word it covers.
type Token struct {
	ID         int
	Value      string
	Start, End int
}

// model turns one word into tokens.
type model interface {
	// tokenize appends the tokens of word to out. Offsets are byte offsets
	// into word.
	tokenize(word string, out []Token) []Token
	// tokenToID and idToToken look the vocabulary up.
	tokenToID(token string) (int, bool)
	idToToken(id int) (string, bool)
	// vocabSize is the number of ids in the vocabulary (without added
	// tokens).
	vocabSize() int
}

// postProcessor adds the special tokens around the encoded sequences (and
// may adjust offsets); it also sets the type ids.
type postProcessor interface {
	// addedTokens is how many tokens process adds to a single sequence or
	// to a pair; truncation leaves room for them.
	addedTokens(pair bool) int
	// process merges a and b (nil for a single sequence) into one encoding.
	// When addSpecial is false it adds no tokens but still sets type ids.
	process(a, b *Encoding, addSpecial bool) *Encoding
}

// decoder turns tokens back into text pieces (Hugging Face's decode_chain);
// the pieces are concatenated.
type decoder interface {
	decodeChain(tokens []string) []string
}

// The registries: "type" in tokenizer.json -> constructor. Each component's
// file adds its types in an init function.
var (
	normalizers    = map[string]func(c *component) (normalizer, error){}
	preTokenizers  = map[string]func(c *component) (preTokenizer, error){}
	models         = map[string]func(c *component) (model, error){}
	postProcessors = map[string]func(c *component) (postProcessor, error){}
	decoders       = map[string]func(c *component) (decoder, error){}
)

// ErrUnsupported is wrapped by the error for a tokenizer.json that names a
// component type this package does not implement.
var ErrUnsupported = errors.New("unsupported component")

// component is the JSON object of one component being built: its text, the
// file it came from and its JSON path there (for error messages), and the
// loader (for nested components and tokenizer_config.json).
type component struct {
	l    *loader
	path string // e.g. normalizer.normalizers[2]
	raw  json.RawMessage
	typ  string
}

// errorf returns an error naming the file and the component's JSON path.
func (c *component) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s (%s): %s", c.l.name, c.path, c.typ, fmt.Sprintf(format, args...))
}

// decode unmarshals the component's JSON object into v, an error naming the
// file and path when a field has the wrong type.
func (c *component) decode(v any) error {
	if err := json.Unmarshal(c.raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return c.errorf("field %q: %s in JSON, want %s", te.Field, te.Value, te.Type)
		}
		return c.errorf("%v", err)
	}
	return nil
}

// field returns the raw JSON of field name (nil when absent or null) and
// its JSON path.
func (c *component) field(name string) (json.RawMessage, string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(c.raw, &m); err != nil {
		return nil, "", c.errorf("%v", err)
	}
	raw := m[name]
	if isNull(raw) {
		raw = nil
	}
	return raw, c.path + "." + name, nil
}

// list returns the components of the JSON array field name (Sequence's
// "normalizers", "pretokenizers", "processors", "decoders").
func (c *component) list(name string) ([]json.RawMessage, string, error) {
	raw, path, err := c.field(name)
	if err != nil || raw == nil {
		return nil, path, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, path, fmt.Errorf("%s: %s: want an array of components: %v", c.l.name, path, err)
	}
	return items, path, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// newComponent reads the "type" of the object at path.
func (l *loader) newComponent(path string, raw json.RawMessage) (*component, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("%s: %s: want an object with a \"type\": %v", l.name, path, err)
	}
	if head.Type == nil {
		return nil, fmt.Errorf("%s: %s: no \"type\"", l.name, path)
	}
	return &component{l: l, path: path, raw: raw, typ: *head.Type}, nil
}

func unsupported[T any](l *loader, path, what, typ string, reg map[string]T) error {
	known := make([]string, 0, len(reg))
	for k := range reg {
		known = append(known, k)
	}
	sort.Strings(known)
	return fmt.Errorf("%s: %s.type: %w: %s %q (this package has %s)", l.name, path, ErrUnsupported, what, typ, strings.Join(known, ", "))
}

// build looks the component's type up in reg and builds it.
func build[T any](l *loader, path string, raw json.RawMessage, what string, reg map[string]func(*component) (T, error)) (T, error) {
	var zero T
	c, err := l.newComponent(path, raw)
	if err != nil {
		return zero, err
	}
	f, ok := reg[c.typ]
	if !ok {
		return zero, unsupported(l, path, what, c.typ, reg)
	}
	return f(c)
}

// The constructors for nested components (Sequence).
func (l *loader) normalizer(path string, raw json.RawMessage) (normalizer, error) {
	return build(l, path, raw, "normalizer", normalizers)
}

func (l *loader) preTokenizer(path string, raw json.RawMessage) (preTokenizer, error) {
	return build(l, path, raw, "pre-tokenizer", preTokenizers)
}

func (l *loader) model(path string, raw json.RawMessage) (model, error) {
	// Files written before models had a "type" are told apart by their
	// fields, as Hugging Face and tokenizers.js do.
	var head map[string]json.RawMessage
	if json.Unmarshal(raw, &head) == nil {
		if _, ok := head["type"]; !ok {
			typ := ""
			switch {
			case len(bytes.TrimSpace(head["vocab"])) > 0 && bytes.TrimSpace(head["vocab"])[0] == '[':
				typ = "Unigram"
			case head["merges"] != nil:
				typ = "BPE"
			case head["continuing_subword_prefix"] != nil || head["max_input_chars_per_word"] != nil:
				typ = "WordPiece"
			}
			if typ != "" {
				head["type"], _ = json.Marshal(typ)
				raw, _ = json.Marshal(head)
			}
		}
	}
	return build(l, path, raw, "model", models)
}

func (l *loader) postProcessor(path string, raw json.RawMessage) (postProcessor, error) {
	return build(l, path, raw, "post-processor", postProcessors)
}

func (l *loader) decoder(path string, raw json.RawMessage) (decoder, error) {
	return build(l, path, raw, "decoder", decoders)
}
