package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Loop runs its body while the trip count M (input 0, optional) is not
// reached and the condition (input 1, optional; then the body's first
// output) is true: as the operator's definition reads,
//
//	for (i = 0; i < M && cond; i++) { cond, v..., scan... = body(i, cond, v...) }
//
// so a trip count of 0 or less runs no iteration. The N loop-carried
// values (inputs 2...) are the body's inputs and outputs 2 to N+1; the
// node's first N outputs are their final values, the rest the body's scan
// outputs of every iteration, stacked on a new first axis. The body reads
// outer-scope values (subgraph.go) and runs with the runtime's planner, a
// plan per shape of its inputs, kept.
//
// Planning plans the body for the carried values' types and shapes: where
// those come back unchanged and the loop has no scan outputs, or its
// iterations are known before the run (M known, the condition and the
// body's known true), the outputs have static shapes; otherwise they
// depend on the data (DataShaped). A run holds every iteration's scan
// outputs and its carried values within the default memory budget
// (DefaultMemoryBudget: a kernel does not see RunOptions; the node's
// outputs are within the run's budget, as every output), and runs at
// most maxLoopIterations iterations: a loop of a huge trip count whose
// condition stays true fails, naming the node, instead of running for
// ever. On the GPU executor the node runs on the host (its body's plans on
// the CPU, inside the device run).

func init() {
	RegisterOp(OpDef{Name: "Loop", Versions: []int{1, 11, 13, 16, 19}, New: newLoop})
}

// maxLoopIterations bounds the iterations of one Loop run: a model whose
// loop runs past it is refused rather than run for hours where the run has
// no deadline (RunOptions.Context), which stops it between iterations.
var maxLoopIterations int64 = 1 << 24 // a variable for tests

type loopOp struct {
	nIn              int // the node's own inputs; outer values follow
	carried, scanned int
	body             *subgraph
	wanted           []bool
}

func newLoop(n *Node) (Kernel, error) {
	if err := n.CheckArity(0, 1<<30, 0, 1<<30); err != nil {
		return nil, err
	}
	k := &loopOp{nIn: len(n.Inputs), carried: max(0, len(n.Inputs)-2), body: n.Attrs.graph("body"), wanted: wantedOutputs(n)}
	k.scanned = len(n.Outputs) - k.carried
	switch {
	case k.body == nil:
		return nil, fmt.Errorf("attribute body (a graph) is required")
	case k.scanned < 0:
		return nil, fmt.Errorf("%d outputs for %d loop-carried values: want one per value, then the scan outputs", len(n.Outputs), k.carried)
	case k.body.formal != 2+k.carried:
		return nil, fmt.Errorf("attribute body: the body declares %d inputs, want %d (the iteration, the condition and %d loop-carried values)", k.body.formal, 2+k.carried, k.carried)
	case len(k.body.m.Outputs) != 1+k.carried+k.scanned:
		return nil, fmt.Errorf("attribute body: the body gives %d outputs, want %d (the condition, %d loop-carried values and %d scan outputs)",
			len(k.body.m.Outputs), 1+k.carried+k.scanned, k.carried, k.scanned)
	}
	for i, want := range []nd.DType{nd.Int64, nd.Bool} {
		if in := k.body.m.Inputs[i]; in.Type != nd.Undefined && in.Type != want {
			return nil, fmt.Errorf("attribute body: its input %d (%q) is declared %v, want %v (the %s)", i, in.Name, in.Type, want, []string{"iteration", "condition"}[i])
		}
	}
	if out := k.body.m.Outputs[0]; out.Type != nd.Undefined && out.Type != nd.Bool {
		return nil, fmt.Errorf("attribute body: its output 0 (%q) is declared %v, want bool (the condition)", out.Name, out.Type)
	}
	return k, nil
}

func (k *loopOp) bodyMetas(in []Meta) []Meta {
	// The body runs only while the condition is true: its condition input
	// is true whenever it runs (a body that passes it on gives a known
	// true, and the loop's iterations are its trip count).
	yes := nd.Scalar(true)
	formal := []Meta{{Type: nd.Int64, Shape: []int{}}, {Type: nd.Bool, Shape: []int{}, Value: &yes}}
	for _, v := range in[min(2, k.nIn):k.nIn] {
		formal = append(formal, Meta{Type: v.Type, Shape: v.Shape})
	}
	return subInputs(k.body, formal, in[k.nIn:])
}

func (k *loopOp) Infer(in []Meta) ([]Meta, error) {
	m, c := metaAt(in[:k.nIn], 0), metaAt(in[:k.nIn], 1)
	if m.Type != nd.Undefined && (m.Type != nd.Int64 || numel(m.Shape) != 1) {
		return nil, fmt.Errorf("the trip count M is %v, want an int64 of one element", m)
	}
	if c.Type != nd.Undefined && (c.Type != nd.Bool || numel(c.Shape) != 1) {
		return nil, fmt.Errorf("the condition is %v, want a bool of one element", c)
	}
	body, err := k.body.infer(k.bodyMetas(in))
	if err != nil {
		return nil, err
	}
	if t := body[0]; t.Type != nd.Bool || numel(t.Shape) != 1 {
		return nil, fmt.Errorf("the body's condition (output 0) is %v, want a bool of one element", t)
	}
	out := make([]Meta, k.carried+k.scanned)
	data := false
	for i := range k.carried {
		v, b := in[2+i], body[1+i]
		if v.Type != b.Type {
			return nil, fmt.Errorf("loop-carried value %d is %v and the body gives %v", i, v.Type, b.Type)
		}
		data = data || !nd.SameShape(v.Shape, b.Shape)
		out[i] = Meta{Type: v.Type, Shape: v.Shape}
	}
	if data {
		return nil, ShapeFromData() // a carried value changes shape
	}
	if k.scanned == 0 {
		return out, nil
	}
	trips, known := k.knownTrips(m, c, body[0])
	if !known {
		return nil, ShapeFromData()
	}
	for i := range k.scanned {
		b := body[1+k.carried+i]
		out[k.carried+i] = Meta{Type: b.Type, Shape: append([]int{trips}, b.Shape...)}
	}
	return out, nil
}

// knownTrips returns the iterations of a loop whose count is known before
// the run: M known, and both the condition given and the body's known
// true (or left out).
func (k *loopOp) knownTrips(m, cond, bodyCond Meta) (int, bool) {
	mv, ok := m.Known()
	if !ok || len(mv) != 1 {
		return 0, false
	}
	if cond.Type != nd.Undefined && (cond.Value == nil || cond.Value.Data[0] == 0) {
		return 0, false
	}
	if bodyCond.Value == nil || bodyCond.Value.Data[0] == 0 {
		return 0, false
	}
	if mv[0] > maxLoopIterations {
		return 0, false // left to the run, which fails at its bound
	}
	return int(max(mv[0], 0)), true
}

// iterate runs the loop: it returns the carried values' final values and
// each scan output's values of every iteration.
func (k *loopOp) iterate(in []nd.Array, mem *memory) (carried []nd.Array, scans [][]nd.Array, err error) {
	trips, bounded := int64(0), false
	if k.nIn > 0 && in[0].Type != nd.Undefined {
		v, err := nd.Int64s(in[0])
		if err != nil || len(v) != 1 {
			return nil, nil, fmt.Errorf("the trip count M is %v%s, want an int64 of one element", in[0].Type, nd.ShapeString(in[0].Shape))
		}
		trips, bounded = v[0], true
	}
	keep := true
	if k.nIn > 1 && in[1].Type != nd.Undefined {
		if keep, err = boolScalar(in[1], "the condition"); err != nil {
			return nil, nil, err
		}
	}
	carried = append([]nd.Array{}, in[min(2, k.nIn):k.nIn]...)
	scans = make([][]nd.Array, k.scanned)
	base := mem.held
	var scanBytes int64
	for i := int64(0); (!bounded || i < trips) && keep; i++ {
		if i == maxLoopIterations {
			return nil, nil, fmt.Errorf("the loop ran %d iterations, the most one run of a Loop may (trip count %s)", i, tripWords(trips, bounded))
		}
		if err := mem.stopped(); err != nil {
			return nil, nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		// new arrays each time: a plan keyed on their contents keeps them
		formal := append([]nd.Array{nd.Scalar(i), nd.Scalar(true)}, carried...)
		outs, err := k.body.run(subInputs(k.body, formal, in[k.nIn:]), mem)
		if err != nil {
			return nil, nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		if keep, err = boolScalar(outs[0], "the body's condition"); err != nil {
			return nil, nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		carried = outs[1 : 1+k.carried]
		for j := range k.scanned {
			s := outs[1+k.carried+j]
			if len(scans[j]) > 0 {
				if first := scans[j][0]; first.Type != s.Type || !nd.SameShape(first.Shape, s.Shape) {
					return nil, nil, fmt.Errorf("iteration %d: scan output %d is %v%s, it was %v%s in the first iteration (a scan output keeps its shape)",
						i, j, s.Type, nd.ShapeString(s.Shape), first.Type, nd.ShapeString(first.Shape))
				}
			}
			scans[j] = append(scans[j], s)
			scanBytes += bytesOf(s)
		}
		// What the run holds now: the scan outputs so far and the carried
		// values; the previous iteration's carried values are garbage.
		mem.held = base + scanBytes + bytesOf(carried...)
	}
	return carried, scans, nil
}

func tripWords(trips int64, bounded bool) string {
	if !bounded {
		return "not given, the condition still true"
	}
	return fmt.Sprint(trips)
}

// scanShapes returns the scan outputs' types and shapes: the iterations,
// then the body's output's shape (from the body's plan where no iteration ran).
func (k *loopOp) scanShapes(in []nd.Array, scans [][]nd.Array) ([]Meta, error) {
	out := make([]Meta, k.scanned)
	var body []Meta
	for j, s := range scans {
		if len(s) > 0 {
			out[j] = Meta{Type: s[0].Type, Shape: append([]int{len(s)}, s[0].Shape...)}
			continue
		}
		if body == nil {
			metas := make([]Meta, len(in))
			for i, a := range in {
				metas[i] = Meta{Type: a.Type, Shape: a.Shape}
				if i >= k.nIn {
					metas[i].Value = &in[i]
				}
			}
			var err error
			if body, err = k.body.infer(k.bodyMetas(metas)); err != nil {
				return nil, fmt.Errorf("the loop ran no iteration, and its scan outputs' shapes are not known without one: %w", err)
			}
		}
		b := body[1+k.carried+j]
		out[j] = Meta{Type: b.Type, Shape: append([]int{0}, b.Shape...)}
	}
	return out, nil
}

func (k *loopOp) Run(in, out []nd.Array) error {
	mem, err := newMemory(0)
	if err != nil {
		return err
	}
	return k.runIn(mem, in, out)
}

// runIn is Run within a run's memory (its budget, its context).
func (k *loopOp) runIn(mem *memory, in, out []nd.Array) error {
	carried, scans, err := k.iterate(in, mem)
	if err != nil {
		return err
	}
	for i, c := range carried {
		if k.wanted[i] {
			if err := copyInto(out[i], c, fmt.Sprintf("loop-carried value %d", i)); err != nil {
				return err
			}
		}
	}
	shapes, err := k.scanShapes(in, scans)
	if err != nil {
		return err
	}
	for j, s := range scans {
		o := out[k.carried+j]
		if !k.wanted[k.carried+j] {
			continue
		}
		if want := shapes[j]; o.Type != want.Type || !nd.SameShape(o.Shape, want.Shape) {
			return fmt.Errorf("scan output %d is %v, the plan is for %v%s", j, want, o.Type, nd.ShapeString(o.Shape))
		}
		stack(o, s)
	}
	return nil
}

func (k *loopOp) RunShaped(in []nd.Array, alloc func(t nd.DType, shape []int) (nd.Array, error)) ([]nd.Array, error) {
	mem, err := newMemory(0)
	if err != nil {
		return nil, err
	}
	return k.runShapedIn(mem, in, alloc)
}

// runShapedIn is RunShaped within a run's memory (its budget, its context).
func (k *loopOp) runShapedIn(mem *memory, in []nd.Array, alloc func(t nd.DType, shape []int) (nd.Array, error)) ([]nd.Array, error) {
	carried, scans, err := k.iterate(in, mem)
	if err != nil {
		return nil, err
	}
	out := make([]nd.Array, k.carried+k.scanned)
	for i, c := range carried {
		if k.wanted[i] {
			if out[i], err = alloc(c.Type, c.Shape); err != nil {
				return nil, err
			}
			copy(out[i].Data, c.Data)
		}
	}
	shapes, err := k.scanShapes(in, scans)
	if err != nil {
		return nil, err
	}
	for j, s := range scans {
		if !k.wanted[k.carried+j] {
			continue
		}
		o, err := alloc(shapes[j].Type, shapes[j].Shape)
		if err != nil {
			return nil, err
		}
		stack(o, s)
		out[k.carried+j] = o
	}
	return out, nil
}

// stack copies parts, arrays of one shape, one after another into o.
func stack(o nd.Array, parts []nd.Array) {
	off := 0
	for _, p := range parts {
		off += copy(o.Data[off:], p.Data)
	}
}
