package tokenizer

// lookupExact returns the replacement of key when key itself is a key of the
// charsmap (for the test's SentencePiece-style longest match).
func (p *precompiledMap) lookupExact(key string) (string, bool) {
	u := p.units
	pos := unitOffset(u[0])
	for i := 0; i < len(key); i++ {
		c := key[i]
		pos ^= uint32(c)
		if pos >= uint32(len(u)) || u[pos]&(1<<31|0xFF) != uint32(c) {
			return "", false
		}
		unit := u[pos]
		pos ^= unitOffset(unit)
		if i == len(key)-1 && (unit>>8)&1 == 1 {
			idx := int(u[pos] & (1<<31 - 1))
			end := idx
			for end < len(p.normalized) && p.normalized[end] != 0 {
				end++
			}
			return p.normalized[idx:end], true
		}
	}
	return "", false
}
