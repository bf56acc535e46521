package tokenizer

import "strings"

func init() {
	decoders["WordPiece"] = newWordPieceDecoder
}

// wordPieceDecoder joins WordPiece tokens: a continuing piece loses its
// prefix and joins the piece before it, other tokens get a space before
// them; cleanup removes the spaces before punctuation and contractions.
type wordPieceDecoder struct {
	prefix  string
	cleanup bool
}

func newWordPieceDecoder(c *component) (decoder, error) {
	var j struct {
		Prefix  *string `json:"prefix"`
		Cleanup *bool   `json:"cleanup"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	d := wordPieceDecoder{prefix: "##", cleanup: true}
	if j.Prefix != nil {
		d.prefix = *j.Prefix
	}
	if j.Cleanup != nil {
		d.cleanup = *j.Cleanup
	}
	return d, nil
}

func (d wordPieceDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		if i > 0 {
			if d.prefix != "" && strings.HasPrefix(tok, d.prefix) {
				tok = strings.Replace(tok, d.prefix, "", 1)
			} else {
				tok = " " + tok
			}
		}
		if d.cleanup {
			tok = cleanUpTokenization(tok)
		}
		out[i] = tok
	}
	return out
}

// cleanUpTokenization is Hugging Face's clean_up_tokenization: the spaces
// before punctuation and English contractions removed, one replacement
// after the other as tokenizers.js does them.
func cleanUpTokenization(s string) string {
	if !strings.Contains(s, " ") {
		return s
	}
	for _, r := range [...][2]string{
		{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
		{" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
	} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}
