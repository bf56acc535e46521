package tokenizer

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnicodeClasses(t *testing.T) {
	for _, c := range []struct {
		re, in string
		want   []string
	}{
		{`\s+`, "a\u3000b\u0085c d", []string{"\u3000", "\u0085", " "}},
		{`\S+`, "a\u3000bé", []string{"a", "bé"}},
		{`\w+`, "café_1 ٣x", []string{"café_1", "٣x"}},
		{`[\w']+`, "don't café", []string{"don't", "café"}},
		{`\d`, "a١2", []string{"١", "2"}},
		{`[\]\s]+`, "a] b", []string{"] "}},
		{`[[:alpha:]\s]+`, "ab c1", []string{"ab c"}},
		{`\\s`, `a\s`, []string{`\s`}},
	} {
		src, err := unicodeClasses(c.re)
		require.NoError(t, err, c.re)
		re, err := regexp.Compile(src)
		require.NoError(t, err, "%s -> %s", c.re, src)
		assert.Equal(t, c.want, re.FindAllString(c.in, -1), "%s -> %s", c.re, src)
	}
	_, err := unicodeClasses(`[\S]`)
	assert.ErrorContains(t, err, `\S inside brackets`)
}
