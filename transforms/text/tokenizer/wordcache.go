package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync"
)

// wordCache remembers the tokens of recent words for a model. It is safe for concurrent
// use and bounded: it holds at most wordCacheShards×wordCacheShardSize words, and a shard
// that fills up is emptied (words of a corpus repeat, so the frequent ones return soon).
type wordCache[V any] struct {
	seed   maphash.Seed
	shards [wordCacheShards]wordCacheShard[V]
}

const (
	wordCacheShards    = 32
	wordCacheShardSize = 1024
)

type wordCacheShard[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

func newWordCache[V any]() *wordCache[V] {
	c := &wordCache[V]{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[string]V)
	}
	return c
}

func (c *wordCache[V]) shard(word string) *wordCacheShard[V] {
	return &c.shards[maphash.String(c.seed, word)%wordCacheShards]
}

func (c *wordCache[V]) get(word string) (V, bool) {
	s := c.shard(word)
	s.mu.RLock()
	v, ok := s.m[word]
	s.mu.RUnlock()
	return v, ok
}

func (c *wordCache[V]) put(word string, v V) {
	s := c.shard(word)
	s.mu.Lock()
	if len(s.m) >= wordCacheShardSize {
		clear(s.m)
	}
	s.m[strings.Clone(word)] = v // not a slice of the caller's (maybe huge) text
	s.mu.Unlock()
}

// len is the number of words held, for tests.
func (c *wordCache[V]) len() int {
	n := 0
	for i := range c.shards {
		c.shards[i].mu.RLock()
		n += len(c.shards[i].m)
		c.shards[i].mu.RUnlock()
	}
	return n
}
