package server

import (
	"context"
	"sync"
)

// weighted is a FIFO weighted semaphore (the memory budget): waiters are
// served in order, so a large request is not starved by small ones.
type weighted struct {
	size    int64
	mu      sync.Mutex
	cur     int64
	waiters []*waiter
}

type waiter struct {
	n     int64
	ready chan struct{}
}

func newWeighted(size int64) *weighted { return &weighted{size: size} }

// Acquire takes n, waiting for it; n must be at most the size.
func (s *weighted) Acquire(ctx context.Context, n int64) error {
	s.mu.Lock()
	if len(s.waiters) == 0 && s.size-s.cur >= n {
		s.cur += n
		s.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			s.cur -= n
		default:
			for i, x := range s.waiters {
				if x == w {
					s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
					break
				}
			}
		}
		s.notify()
		return ctx.Err()
	}
}

// TryAcquire takes n if it is free now and nobody waits.
func (s *weighted) TryAcquire(n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiters) == 0 && s.size-s.cur >= n {
		s.cur += n
		return true
	}
	return false
}

// Release gives back n.
func (s *weighted) Release(n int64) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.cur -= n
	s.notify()
	s.mu.Unlock()
}

func (s *weighted) notify() {
	for len(s.waiters) > 0 {
		w := s.waiters[0]
		if s.size-s.cur < w.n {
			return
		}
		s.cur += w.n
		s.waiters = s.waiters[1:]
		close(w.ready)
	}
}
