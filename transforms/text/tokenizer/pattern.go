package tokenizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// pattern is the "pattern" of Split and Replace: {"String": s}, a literal,
// or {"Regex": re}, a regular expression.
type pattern struct {
	literal string
	re      *regexp.Regexp
}

// parsePattern reads the field name of c as a pattern. Regular expressions
// are Go's (RE2 syntax); Hugging Face's are Oniguruma's, a superset: a
// pattern RE2 cannot take (look-around, possessive quantifiers,
// backreferences) is refused here, naming it.
func parsePattern(c *component, name string) (pattern, error) {
	raw, path, err := c.field(name)
	if err != nil {
		return pattern{}, err
	}
	var j struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	}
	if raw == nil || json.Unmarshal(raw, &j) != nil || (j.String == nil) == (j.Regex == nil) {
		return pattern{}, c.errorf("%s: want {\"String\": ...} or {\"Regex\": ...}", path)
	}
	if j.String != nil {
		if *j.String == "" {
			return pattern{}, c.errorf("%s: empty string", path)
		}
		return pattern{literal: *j.String}, nil
	}
	src, err := unicodeClasses(*j.Regex)
	if err != nil {
		return pattern{}, c.errorf("%s: regex %q: %v", path, *j.Regex, err)
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return pattern{}, c.errorf("%s: regex %q is not one Go's regexp (RE2) takes: %v", path, *j.Regex, err)
	}
	return pattern{re: re}, nil
}

// Oniguruma's \s, \d and \w are Unicode's; RE2's are ASCII only.
const (
	classSpace = `\t\n\v\f\r \x{85}\p{Z}`
	classDigit = `\p{Nd}`
	classWord  = `\p{L}\p{M}\p{Nd}\p{Pc}\p{Nl}\x{200C}\x{200D}`
)

// unicodeClasses rewrites \s, \d, \w and their negations to the Unicode
// classes Oniguruma gives them. A negated class inside brackets ([\S])
// has no RE2 spelling and is refused.
func unicodeClasses(re string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(re); i++ {
		c := re[i]
		switch {
		case c == '\\' && i+1 < len(re):
			d := re[i+1]
			var cls string
			switch d {
			case 's', 'S':
				cls = classSpace
			case 'd', 'D':
				cls = classDigit
			case 'w', 'W':
				cls = classWord
			}
			i++
			switch {
			case cls == "":
				b.WriteByte(c)
				b.WriteByte(d)
			case inClass && d >= 'a':
				b.WriteString(cls)
			case inClass:
				return "", fmt.Errorf("\\%c inside brackets has no equivalent in Go's regexp", d)
			case d >= 'a':
				b.WriteString("[" + cls + "]")
			default:
				b.WriteString("[^" + cls + "]")
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// A ] right after [ or [^ is a literal.
			if i+1 < len(re) && re[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(re) && re[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case c == '[' && inClass && strings.HasPrefix(re[i:], "[:"):
			k := strings.Index(re[i:], ":]")
			if k < 0 {
				b.WriteByte(c)
				continue
			}
			b.WriteString(re[i : i+k+2])
			i += k + 1
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// find appends the byte ranges of the non-overlapping matches in s, left to
// right.
func (p pattern) find(s string, out [][2]int) [][2]int {
	if p.re != nil {
		for _, m := range p.re.FindAllStringIndex(s, -1) {
			out = append(out, [2]int{m[0], m[1]})
		}
		return out
	}
	for i := 0; ; {
		k := strings.Index(s[i:], p.literal)
		if k < 0 {
			return out
		}
		out = append(out, [2]int{i + k, i + k + len(p.literal)})
		i += k + len(p.literal)
	}
}
