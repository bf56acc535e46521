package tokenizer

func init() {
	postProcessors["TemplateProcessing"] = newTemplate
}

// templatePiece is one item of a template: a special token (its ids) or
// the sequence A or B, with its type id.
type templatePiece struct {
	seq    int // 0 for A, 1 for B, -1 for a special token
	typeID int
	ids    []int
	tokens []string
}

// template is TemplateProcessing: "[CLS] $A [SEP]" for one text and
// "[CLS] $A [SEP] $B:1 [SEP]:1" for a pair, as tokenizer.json spells them.
type template struct {
	single, pair []templatePiece
}

type templateItemJSON struct {
	SpecialToken *struct {
		ID     string `json:"id"`
		TypeID int    `json:"type_id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID     string `json:"id"`
		TypeID int    `json:"type_id"`
	} `json:"Sequence"`
}

func newTemplate(c *component) (postProcessor, error) {
	var j struct {
		Single        []templateItemJSON `json:"single"`
		Pair          []templateItemJSON `json:"pair"`
		SpecialTokens map[string]struct {
			ID     string   `json:"id"`
			IDs    []int    `json:"ids"`
			Tokens []string `json:"tokens"`
		} `json:"special_tokens"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	conv := func(name string, items []templateItemJSON) ([]templatePiece, error) {
		var out []templatePiece
		for i, it := range items {
			switch {
			case it.SpecialToken != nil:
				st, ok := j.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return nil, c.errorf("%s[%d]: special token %q is not in special_tokens", name, i, it.SpecialToken.ID)
				}
				if len(st.IDs) != len(st.Tokens) {
					return nil, c.errorf("special_tokens[%q]: %d ids for %d tokens", it.SpecialToken.ID, len(st.IDs), len(st.Tokens))
				}
				out = append(out, templatePiece{seq: -1, typeID: it.SpecialToken.TypeID, ids: st.IDs, tokens: st.Tokens})
			case it.Sequence != nil:
				switch it.Sequence.ID {
				case "A":
					out = append(out, templatePiece{seq: 0, typeID: it.Sequence.TypeID})
				case "B":
					if name == "single" {
						return nil, c.errorf("single[%d]: the single template names sequence B", i)
					}
					out = append(out, templatePiece{seq: 1, typeID: it.Sequence.TypeID})
				default:
					return nil, c.errorf("%s[%d]: sequence %q, want A or B", name, i, it.Sequence.ID)
				}
			default:
				return nil, c.errorf("%s[%d]: neither SpecialToken nor Sequence", name, i)
			}
		}
		return out, nil
	}
	t := &template{}
	var err error
	if t.single, err = conv("single", j.Single); err != nil {
		return nil, err
	}
	if t.pair, err = conv("pair", j.Pair); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *template) addedTokens(pair bool) int {
	pieces := t.single
	if pair {
		pieces = t.pair
	}
	n := 0
	for _, p := range pieces {
		n += len(p.ids)
	}
	return n
}

func (t *template) process(a, b *Encoding, addSpecial bool) *Encoding {
	pieces := t.single
	if b != nil {
		pieces = t.pair
	}
	n := a.Len()
	if b != nil {
		n += b.Len()
	}
	out := newEncoding(n + t.addedTokens(b != nil))
	for _, p := range pieces {
		switch p.seq {
		case -1:
			if addSpecial {
				for i, id := range p.ids {
					out.push(id, p.typeID, p.tokens[i], [2]int{}, 1, -1, -1)
				}
			}
		case 0:
			out.appendEncoding(a, p.typeID)
		case 1:
			out.appendEncoding(b, p.typeID)
		}
	}
	return out
}
