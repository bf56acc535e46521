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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// referenceCases are the tokenizer.json files held to tokenizers.js, each
// on its own corpus of referenceCorpusSize texts. Add a file here to hold
// a new model or component to the reference.
var referenceCases = []struct {
	name string
	file string // tokenizer.json; tokenizer_config.json beside it when present
	seed uint64
	// joinPairs: tokenizers.js drops the second text of a pair (its ByteLevel
	// post-processor); compare a pair with its encodings of the two texts
	// joined, which is what the Rust library returns.
	joinPairs bool
	// normalizer, when set, replaces the file's normalizer (JSON) for the
	// comparison: tokenizers.js approximates Precompiled with NFKC.
	normalizer string
}{
	{name: "bert-uncased", file: "testdata/bert/uncased/tokenizer.json", seed: 1},
	{name: "bert-cased", file: "testdata/bert/cased/tokenizer.json", seed: 2},
	{name: "gpt2", file: "testdata/gpt2/tokenizer.json", seed: 3, joinPairs: true},
	{name: "spm-unigram", file: "testdata/spm/test_model.tokenizer.json", seed: 4, normalizer: `{"type": "NFKC"}`},
	{name: "spm-unigram-ja", file: "testdata/spm/test_ja_model.tokenizer.json", seed: 5, normalizer: `{"type": "NFKC"}`},
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
			if c.normalizer != "" {
				file = withNormalizer(t, file, c.normalizer)
			}
			compareWithReference(t, file, referenceCorpus(n, c.seed), c.joinPairs)
		})
	}
}

// refOutput is what tokenizers.js returns for one input.
type refOutput struct {
	IDs     []int    `json:"ids"`
	Tokens  []string `json:"tokens"`
	TypeIDs []int    `json:"type_ids"`
	Mask    []int    `json:"mask"`
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
// file and with tokenizers.js, and requires the same ids, tokens, type ids
// and attention masks text by text (tokenizers.js neither truncates nor
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
		if d == "" {
			same++
			if err == nil {
				if msg := checkTruncation(tk, in, e); msg != "" {
					d = msg
				}
			}
		}
		if d != "" && len(diffs) < 10 {
			text := fmt.Sprintf("%q", in.A)
			if in.B != nil {
				text += fmt.Sprintf(" + %q", *in.B)
			}
			if len(text) > 400 {
				text = text[:400] + "..."
			}
			diffs = append(diffs, fmt.Sprintf("text %d %s: %s", i, text, d))
		}
	}
	t.Logf("%s: %d of %d texts identical to tokenizers.js", file, same, len(inputs))
	assert.Empty(t, diffs, "%d texts differ from tokenizers.js; the first:\n%s", len(inputs)-same, strings.Join(diffs, "\n"))
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
