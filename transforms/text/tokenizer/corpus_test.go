package tokenizer

import (
	"math/rand/v2"
	"strings"
)

// refInput is one input of the reference comparison: a text, or a pair
// when B is set.
type refInput struct {
	A string  `json:"a"`
	B *string `json:"b,omitempty"`
}

var corpusWords = strings.Fields(`the of and to in is was for that on as with by he at from his it an were
are which this be or has had not but first one their its new after who they two her she been other when
there all during into school time may years more most only over city some world would where later up
such used many can state about national out known university united then made between while under
tokenizer embedding vector search retrieval pipeline dataflow beam model inference batch throughput
latency gpu cpu tensor matrix transformer attention layer encoder decoder sentence paragraph document
running jumped quickly unbelievable internationalization misunderstanding strawberries antidisestablishment
don't can't I'm you're we've they'll it's o'clock e-mail state-of-the-art U.S.A. Dr. Mr. etc. 3.14 1,000
2024 100% $5 #hashtag @user https://example.com/path?q=1&r=2 foo_bar camelCase snake_case HTTP2 x86_64`)

var corpusAccents = strings.Fields(`café naïve résumé Ångström Øresund façade São Paulo Zürich crème brûlée
jalapeño piñata coöperate Škoda Łódź Dvořák Ærøskøbing İstanbul ıi Straße ŒUVRE déjà vu Ñandú Việt Nam
Tiếng Việt Hà Nội Kraków Gdańsk Tromsø Reykjavík Þingvellir ΟΔΥΣΣΕΥΣ ΣΊΣΥΦΟΣ Σ ΌΣΟΣ Αθήνα Москва Ёлка`)

var corpusEmoji = []string{"😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "🇯🇵", "#️⃣", "❤️", "🤖", "🧪", "✨", "🏳️‍🌈", "👩🏿‍💻", "☕", "🐍", "🦀", "💯", "©", "™", "⚡"}

var corpusControls = []string{"\x00", "\x01", "\x07", "\b", "\t", "\n", "\v", "\f", "\r", "\x1b", "\x7f", "\u0085",
	"\u00ad", "\u200b", "\u200c", "\u200d", "\u200e", "\u2060", "\ufeff", "\ufffd", "\ue000", "\U000f0000",
	"\u00a0", "\u2002", "\u2009", "\u3000", "\u2028", "\u2029", "\u202f", "\u205f", "\u1680", "\u180e"}

var corpusAdded = []string{"[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "[cls]", "[SEP", "[[MASK]]", "x[SEP]y", "[SEP] [CLS]", " \t[MASK]\n ", "State-Of-The-Art", "UNITED", "united states"}

// corpusBlocks are ranges of code points to sample from: scripts, symbols,
// marks, compatibility forms (assigned in Unicode 15.0, which both Go and
// Node 20 know).
var corpusBlocks = [][2]rune{
	{0x20, 0x7e}, {0xa1, 0x17f}, {0x180, 0x24f}, {0x300, 0x36f}, {0x370, 0x3ff}, {0x400, 0x4ff},
	{0x5d0, 0x5ea}, {0x620, 0x64a}, {0x660, 0x669}, {0x900, 0x97f}, {0xe01, 0xe3a}, {0x1e00, 0x1eff},
	{0x2000, 0x206f}, {0x2100, 0x214f}, {0x2150, 0x218b}, {0x2190, 0x21ff}, {0x2460, 0x24ff},
	{0x3041, 0x3096}, {0x30a1, 0x30fa}, {0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xac00, 0xd7a3},
	{0xf900, 0xfaff}, {0xfb00, 0xfb06}, {0xff01, 0xff5e}, {0x1d400, 0x1d4ff}, {0x1f300, 0x1f64f},
	{0x20000, 0x2a6df},
}

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

func corpusSentence(r *rand.Rand, words int) string {
	var b strings.Builder
	for i := range words {
		w := pick(r, corpusWords)
		if i == 0 || r.IntN(12) == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		if r.IntN(9) == 0 {
			b.WriteString(pick(r, []string{",", ";", ":", " -", " (x)", "!", "?", "...", "\""}))
		}
	}
	b.WriteString(pick(r, []string{".", ".", ".", "!", "?", ""}))
	return b.String()
}

// corpusText returns text number i of the corpus.
func corpusText(r *rand.Rand, i int) string {
	switch i % 16 {
	case 0, 1, 2:
		return corpusSentence(r, 3+r.IntN(40))
	case 3: // accents
		var b strings.Builder
		for j := range 2 + r.IntN(15) {
			if j > 0 {
				b.WriteByte(' ')
			}
			if r.IntN(2) == 0 {
				b.WriteString(pick(r, corpusAccents))
			} else {
				b.WriteString(pick(r, corpusWords))
			}
		}
		return b.String()
	case 4: // random code points from the blocks, some spaces
		var b strings.Builder
		for range 1 + r.IntN(60) {
			bl := pick(r, corpusBlocks)
			b.WriteRune(bl[0] + rune(r.IntN(int(bl[1]-bl[0]+1))))
			if r.IntN(5) == 0 {
				b.WriteByte(' ')
			}
		}
		return b.String()
	case 5: // CJK prose mixed with Latin
		var b strings.Builder
		for range 1 + r.IntN(30) {
			switch r.IntN(4) {
			case 0:
				b.WriteRune(0x4e00 + rune(r.IntN(0x5200)))
			case 1:
				b.WriteRune(0x3041 + rune(r.IntN(0x56)))
			case 2:
				b.WriteRune(0xac00 + rune(r.IntN(0x2ba4)))
			default:
				b.WriteString(" " + pick(r, corpusWords) + " ")
			}
		}
		return b.String()
	case 6: // emoji
		s := corpusSentence(r, 2+r.IntN(10))
		return insertAt(r, s, pick(r, corpusEmoji)) + pick(r, corpusEmoji)
	case 7: // control, zero-width and odd white space characters
		s := corpusSentence(r, 2+r.IntN(12))
		for range 1 + r.IntN(5) {
			s = insertAt(r, s, pick(r, corpusControls))
		}
		return s
	case 8: // very long words and numbers
		switch r.IntN(4) {
		case 0:
			return strings.Repeat(pick(r, []string{"a", "ab", "xyz", "é", "中"}), 20+r.IntN(400))
		case 1:
			return "word " + strings.Repeat("9", 50+r.IntN(200)) + " end"
		case 2:
			return strings.Repeat("supercalifragilistic", 1+r.IntN(8))
		default:
			return strings.Repeat("!?", 1+r.IntN(100))
		}
	case 9: // empty and white space only
		return pick(r, []string{"", " ", "  ", "\t", "\n\n", " \u3000 ", "\u00a0", "\u200b", "\x00", "\ufeff"})
	case 10: // past the model's max length (512 tokens)
		var b strings.Builder
		for b.Len() < 2500+r.IntN(4000) {
			b.WriteString(corpusSentence(r, 20) + " ")
		}
		return b.String()
	case 11: // added tokens in the text
		s := corpusSentence(r, 2+r.IntN(10))
		for range 1 + r.IntN(3) {
			sep := pick(r, []string{"", " ", "  "})
			s = insertAt(r, s, sep+pick(r, corpusAdded)+sep)
		}
		return s
	case 12: // case mappings and compatibility forms
		return pick(r, []string{"İSTANBUL ıstanbul", "ΟΔΥΣΣΕΥΣ ΣΑΣ. Σ", "STRASSE straße ẞ", "ﬁnance ﬂow ﬀ", "ＡＢＣ１２３！", "𝐀𝐁𝐂 𝑥𝑦𝑧", "Ⅻ ⅻ ½ ² ℃ № ™", "e\u0301 a\u0308 n\u0303", "Å Å Å", "ǅ ǈ ǋ ǲ", "ᾼ ῌ ῼ ΐ"}) + " " + corpusSentence(r, r.IntN(5))
	case 13: // mixed scripts
		return pick(r, corpusAccents) + " " + string(rune(0x5d0+r.IntN(27))) + string(rune(0x620+r.IntN(43))) + " " + string(rune(0x905+r.IntN(50))) + " " + string(rune(0xe01+r.IntN(46))) + " " + corpusSentence(r, 3)
	default:
		return corpusSentence(r, 1+r.IntN(80))
	}
}

func insertAt(r *rand.Rand, s, ins string) string {
	// At a rune boundary.
	i := r.IntN(len(s) + 1)
	for i < len(s) && (s[i]&0xc0) == 0x80 {
		i++
	}
	return s[:i] + ins + s[i:]
}

// referenceCorpus returns n inputs, deterministic for a seed: every tenth
// one is a pair (its second text never empty: tokenizers.js encodes an
// empty second text as no second text, where Hugging Face's Rust crate
// encodes an empty pair member).
func referenceCorpus(n int, seed uint64) []refInput {
	r := rand.New(rand.NewPCG(seed, 0x746f6b656e697a65))
	out := make([]refInput, n)
	for i := range out {
		out[i].A = corpusText(r, i)
		if i%10 == 9 {
			b := corpusText(r, r.IntN(16))
			if b == "" {
				b = "pair"
			}
			out[i].B = &b
		}
	}
	return out
}
