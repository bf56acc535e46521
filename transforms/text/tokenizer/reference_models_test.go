package tokenizer

import "testing"

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
