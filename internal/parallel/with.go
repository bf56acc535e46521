package parallel

import (
	"reflect"
	"sync"
)

// ForWith is For whose function takes its data as an argument: fn(&args,
// lo, hi). The arguments are copied into a value kept between loops (one
// pool per type A), so that where fn captures nothing (a function literal
// that names only its parameters, or a top-level function: no closure is
// allocated), the loop allocates nothing: the way for a kernel that runs
// once per model run.
func ForWith[A any](n, cost int, args A, fn func(a *A, lo, hi int)) {
	if n <= 0 {
		return
	}
	b := boxes[A]() // args in a box, not on the stack: fn's pointer would move them to the heap
	b.args, b.fn = args, fn
	if workers := Workers(n, cost); workers == 1 {
		fn(&b.args, 0, n)
	} else {
		chunk := (n + workers - 1) / workers
		run(loop{n: (n + chunk - 1) / chunk, chunk: chunk, total: n, ranges: b}, workers)
	}
	var zero A
	b.args, b.fn = zero, nil // hold none of the caller's
	boxPools.pool(reflect.TypeFor[A]()).Put(b)
}

// EachWith is Each whose function takes its data as an argument (see
// ForWith): fn(&args, i) for every i in [0, n).
func EachWith[A any](n, cost int, args A, fn func(a *A, i int)) {
	if n <= 0 {
		return
	}
	b := boxes[A]()
	b.args, b.each = args, fn
	if workers := Workers(n, cost); workers == 1 {
		for i := range n {
			fn(&b.args, i)
		}
	} else {
		run(loop{n: n, tasks: b, grain: grain(n, cost, workers)}, workers)
	}
	var zero A
	b.args, b.each = zero, nil
	boxPools.pool(reflect.TypeFor[A]()).Put(b)
}

// box is a loop's arguments and function.
type box[A any] struct {
	args A
	fn   func(a *A, lo, hi int)
	each func(a *A, i int)
}

func (b *box[A]) Range(lo, hi int) { b.fn(&b.args, lo, hi) }
func (b *box[A]) Task(i int)       { b.each(&b.args, i) }

// boxPools holds a sync.Pool of boxes for each argument type.
var boxPools poolsByType

type poolsByType struct{ m sync.Map } // reflect.Type -> *sync.Pool

func (p *poolsByType) pool(t reflect.Type) *sync.Pool {
	if v, ok := p.m.Load(t); ok {
		return v.(*sync.Pool)
	}
	v, _ := p.m.LoadOrStore(t, new(sync.Pool))
	return v.(*sync.Pool)
}

// boxes returns a box for arguments of type A, pooled.
func boxes[A any]() *box[A] {
	if b, ok := boxPools.pool(reflect.TypeFor[A]()).Get().(*box[A]); ok {
		return b
	}
	return new(box[A])
}
