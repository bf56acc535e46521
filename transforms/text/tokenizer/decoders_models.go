package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The decoders of SentencePiece-style BPE files (Llama, Mistral: a Sequence
// of Replace ▁ by a space, ByteFallback, Fuse and Strip), as the Rust crate
// has them.
func init() {
	decoders["ByteFallback"] = func(*component) (decoder, error) { return byteFallbackDecoder{}, nil }
	decoders["Fuse"] = func(*component) (decoder, error) { return fuseDecoder{}, nil }
	decoders["Strip"] = newStripDecoder
	decoders["Replace"] = newReplaceDecoder
	decoders["Sequence"] = newDecoderSequence
}

// byteFallbackDecoder turns runs of <0xNN> tokens back into the text their
// bytes spell, a U+FFFD for each byte of a run that is not valid UTF-8.
type byteFallbackDecoder struct{}

func (byteFallbackDecoder) decodeChain(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, t := range tokens {
		if len(t) == 6 && strings.HasPrefix(t, "<0x") && t[5] == '>' {
			if b, err := strconv.ParseUint(t[3:5], 16, 8); err == nil {
				run = append(run, byte(b))
				continue
			}
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

// fuseDecoder joins the tokens into one.
type fuseDecoder struct{}

func (fuseDecoder) decodeChain(tokens []string) []string {
	return []string{strings.Join(tokens, "")}
}

// stripDecoder removes up to start leading and stop trailing content
// characters from each token.
type stripDecoder struct {
	content     rune
	start, stop int
}

func newStripDecoder(c *component) (decoder, error) {
	var j struct {
		Content *string `json:"content"`
		Start   int     `json:"start"`
		Stop    int     `json:"stop"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	if j.Content == nil || utf8.RuneCountInString(*j.Content) != 1 {
		return nil, c.errorf("content must be one character")
	}
	if j.Start < 0 || j.Stop < 0 {
		return nil, c.errorf("start %d, stop %d: negative", j.Start, j.Stop)
	}
	r, _ := utf8.DecodeRuneInString(*j.Content)
	return stripDecoder{r, j.Start, j.Stop}, nil
}

func (d stripDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		for k := 0; k < d.start; k++ {
			r, w := utf8.DecodeRuneInString(t)
			if w == 0 || r != d.content {
				break
			}
			t = t[w:]
		}
		for k := 0; k < d.stop; k++ {
			r, w := utf8.DecodeLastRuneInString(t)
			if w == 0 || r != d.content {
				break
			}
			t = t[:len(t)-w]
		}
		out[i] = t
	}
	return out
}

// replaceDecoder replaces the pattern's matches in each token by content.
type replaceDecoder struct {
	pattern pattern
	content string
}

func newReplaceDecoder(c *component) (decoder, error) {
	var j struct {
		Content *string `json:"content"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	if j.Content == nil {
		return nil, c.errorf("no \"content\"")
	}
	p, err := parsePattern(c, "pattern")
	if err != nil {
		return nil, err
	}
	return replaceDecoder{p, *j.Content}, nil
}

func (d replaceDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	var buf [8][2]int
	for i, t := range tokens {
		m := d.pattern.find(t, buf[:0])
		if len(m) == 0 {
			out[i] = t
			continue
		}
		var b strings.Builder
		prev := 0
		for _, r := range m {
			b.WriteString(t[prev:r[0]])
			b.WriteString(d.content)
			prev = r[1]
		}
		b.WriteString(t[prev:])
		out[i] = b.String()
	}
	return out
}

// decoderSequence applies decoders in order.
type decoderSequence []decoder

func newDecoderSequence(c *component) (decoder, error) {
	items, path, err := c.list("decoders")
	if err != nil {
		return nil, err
	}
	var seq decoderSequence
	for i, raw := range items {
		if isNull(raw) {
			continue
		}
		d, err := c.l.decoder(path+"["+strconv.Itoa(i)+"]", raw)
		if err != nil {
			return nil, err
		}
		seq = append(seq, d)
	}
	return seq, nil
}

func (seq decoderSequence) decodeChain(tokens []string) []string {
	for _, d := range seq {
		tokens = d.decodeChain(tokens)
	}
	return tokens
}
