package tokenizer

import "sort"

// pieceTrie is a byte trie over a vocabulary's pieces, for the common-prefix searches
// of Unigram's lattice: which pieces start at a position of the text. It is built once
// and read concurrently.
type pieceTrie struct {
	nodes []pieceNode
	edges []pieceEdge
	root  [256]int32 // the root's children by byte, -1 where none
}

type pieceNode struct {
	edgeStart, edgeEnd int32 // this node's children in edges, sorted by byte
	value              int32 // the piece's id, -1 where no piece ends here
}

type pieceEdge struct {
	b     byte
	child int32
}

// newPieceTrie builds the trie of pieces, piece i having id ids[i]. Empty pieces are left
// out (they match nothing).
func newPieceTrie(pieces []string, ids []int32) *pieceTrie {
	order := make([]int, 0, len(pieces))
	for i, p := range pieces {
		if p != "" {
			order = append(order, i)
		}
	}
	sort.Slice(order, func(a, b int) bool { return pieces[order[a]] < pieces[order[b]] })
	t := &pieceTrie{}
	for i := range t.root {
		t.root[i] = -1
	}
	// build makes the node for the keys order[lo:hi], which share their first depth bytes,
	// and returns its index.
	var build func(lo, hi, depth int) int32
	build = func(lo, hi, depth int) int32 {
		idx := int32(len(t.nodes))
		t.nodes = append(t.nodes, pieceNode{value: -1})
		if lo < hi && len(pieces[order[lo]]) == depth {
			t.nodes[idx].value = ids[order[lo]]
			lo++ // a piece listed twice: the caller gives both the same id
			for lo < hi && len(pieces[order[lo]]) == depth {
				lo++
			}
		}
		type group struct {
			b      byte
			lo, hi int
		}
		var groups []group
		for i := lo; i < hi; {
			b := pieces[order[i]][depth]
			j := i
			for j < hi && pieces[order[j]][depth] == b {
				j++
			}
			groups = append(groups, group{b, i, j})
			i = j
		}
		start := int32(len(t.edges))
		for _, g := range groups {
			t.edges = append(t.edges, pieceEdge{b: g.b})
		}
		t.nodes[idx].edgeStart, t.nodes[idx].edgeEnd = start, start+int32(len(groups))
		for k, g := range groups {
			c := build(g.lo, g.hi, depth+1)
			t.edges[start+int32(k)].child = c
		}
		return idx
	}
	build(0, len(order), 0)
	for e := t.nodes[0].edgeStart; e < t.nodes[0].edgeEnd; e++ {
		t.root[t.edges[e].b] = t.edges[e].child
	}
	return t
}

func (t *pieceTrie) child(node int32, b byte) int32 {
	if node == 0 {
		return t.root[b]
	}
	n := t.nodes[node]
	lo, hi := n.edgeStart, n.edgeEnd
	for lo < hi {
		mid := (lo + hi) / 2
		switch eb := t.edges[mid].b; {
		case eb == b:
			return t.edges[mid].child
		case eb < b:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return -1
}

// prefixes calls fn with the id and byte length of each piece that s starts with, the
// shortest first.
func (t *pieceTrie) prefixes(s string, fn func(id int32, n int)) {
	node := int32(0)
	for i := 0; i < len(s); i++ {
		node = t.child(node, s[i])
		if node < 0 {
			return
		}
		if v := t.nodes[node].value; v >= 0 {
			fn(v, i+1)
		}
	}
}
