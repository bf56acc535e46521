package onnx

import (
	"sync/atomic"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// byShapes keeps what a kernel derives from its inputs' shapes (a
// product's geometry and batch offsets) for the shapes it last saw, so
// that the runs of a plan, whose shapes do not change, derive nothing
// again and allocate nothing. Other shapes make a new value, which is kept
// instead (a kernel is shared by its model's plans: the last one wins).
type byShapes[T any] struct {
	last atomic.Pointer[shapesEntry[T]]
}

type shapesEntry[T any] struct {
	shapes [][]int
	v      T
}

// get returns the value for shapes, made by derive where it is not kept.
func (c *byShapes[T]) get(derive func() (T, error), shapes ...[]int) (T, error) {
	if e := c.last.Load(); e != nil && len(e.shapes) == len(shapes) {
		same := true
		for i, s := range shapes {
			same = same && nd.SameShape(e.shapes[i], s)
		}
		if same {
			return e.v, nil
		}
	}
	v, err := derive()
	if err != nil {
		return v, err
	}
	e := &shapesEntry[T]{v: v, shapes: make([][]int, len(shapes))}
	for i, s := range shapes {
		e.shapes[i] = append([]int{}, s...)
	}
	c.last.Store(e)
	return v, nil
}
