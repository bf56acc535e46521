package tokenizer

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLlamaStyleDecoders(t *testing.T) {
	l := &loader{name: "test.json"}
	d, err := l.decoder("decoder", json.RawMessage(`{"type": "Sequence", "decoders": [
		{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
		{"type": "ByteFallback"},
		{"type": "Fuse"},
		{"type": "Strip", "content": " ", "start": 1, "stop": 0}]}`))
	require.NoError(t, err)
	// ▁Hello ▁wor ld, then 日 as its three bytes, then a cut-short byte run.
	got := d.decodeChain([]string{"▁Hello", "▁wor", "ld", "▁", "<0xE6>", "<0x97>", "<0xA5>", "!", "<0xE6>", "<0x97>"})
	assert.Equal(t, []string{"Hello world 日!\ufffd\ufffd"}, got)

	_, err = l.decoder("decoder", json.RawMessage(`{"type": "Strip", "content": "ab", "start": 1, "stop": 0}`))
	assert.ErrorContains(t, err, "test.json: decoder (Strip): content must be one character")
	_, err = l.decoder("decoder", json.RawMessage(`{"type": "Sequence", "decoders": [{"type": "Nope"}]}`))
	assert.ErrorContains(t, err, "decoder.decoders[0]")
	assert.ErrorIs(t, err, ErrUnsupported)
}
