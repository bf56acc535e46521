package onnx

import (
	"fmt"
	"slices"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Scan runs its body once per element of its scan inputs' sequence axis,
// carrying N state values from one iteration to the next: from version 9
// the inputs are the N initial states and then num_scan_inputs scan
// inputs, each scanned along its scan_input_axes axis (0 by default) in
// its scan_input_directions direction (0 forward, 1 backward); the
// outputs are the N final states and then the body's scan outputs of
// every iteration, stacked along scan_output_axes in
// scan_output_directions. Version 8 has a batch axis first on every input
// and output, an optional sequence_lens first input (each batch entry's
// length: the runtime takes only the full length, and refuses shorter
// ones, naming the entry) and directions for its scan inputs. The number
// of iterations is the scan axis's length, known from shapes, so the
// outputs' shapes are known when planning. The body reads outer-scope
// values (subgraph.go); on the GPU executor the node runs on the host.

func init() {
	RegisterOp(OpDef{Name: "Scan", Versions: []int{8, 9, 11, 16, 19}, New: newScan})
}

type scanOp struct {
	nIn                   int // the node's own inputs; outer values follow
	v8                    bool
	states, scans, outs   int // N, M, K
	inAxes, inDirs        []int
	outAxes, outDirs      []int
	body                  *subgraph
	stateFirst, scanFirst int // where the states and scan inputs begin
}

func newScan(n *Node) (Kernel, error) {
	a := n.Attrs
	k := &scanOp{nIn: len(n.Inputs), v8: n.Since < 9, body: a.graph("body")}
	m := a.Int("num_scan_inputs", -1)
	if m < 1 {
		return nil, fmt.Errorf("attribute num_scan_inputs is %d, want 1 or more", m)
	}
	k.scans = int(m)
	if k.v8 {
		k.stateFirst = 1 // sequence_lens first
	}
	k.scanFirst = len(n.Inputs) - k.scans
	k.states = k.scanFirst - k.stateFirst
	k.outs = len(n.Outputs) - k.states
	switch {
	case k.body == nil:
		return nil, fmt.Errorf("attribute body (a graph) is required")
	case k.states < 0:
		return nil, fmt.Errorf("%d inputs for %d scan inputs", len(n.Inputs), k.scans)
	case k.outs < 0:
		return nil, fmt.Errorf("%d outputs for %d state values: want one per state, then the scan outputs", len(n.Outputs), k.states)
	case k.body.formal != k.states+k.scans:
		return nil, fmt.Errorf("attribute body: the body declares %d inputs, want %d (%d states and %d scan inputs)", k.body.formal, k.states+k.scans, k.states, k.scans)
	case len(k.body.m.Outputs) != k.states+k.outs:
		return nil, fmt.Errorf("attribute body: the body gives %d outputs, want %d (%d states and %d scan outputs)", len(k.body.m.Outputs), k.states+k.outs, k.states, k.outs)
	}
	list := func(name string, n int) []int {
		out := make([]int, n)
		if v, ok := a.Ints(name); ok {
			if len(v) != n {
				a.Fail("attribute %s has %d values for %d", name, len(v), n)
				return out
			}
			for i, x := range v {
				out[i] = int(x)
			}
		}
		return out
	}
	if k.v8 {
		k.inDirs = list("directions", k.scans)
		k.inAxes = make([]int, k.scans)
		k.outAxes, k.outDirs = make([]int, k.outs), make([]int, k.outs)
	} else {
		k.inAxes, k.inDirs = list("scan_input_axes", k.scans), list("scan_input_directions", k.scans)
		k.outAxes, k.outDirs = list("scan_output_axes", k.outs), list("scan_output_directions", k.outs)
	}
	for _, d := range append(append([]int{}, k.inDirs...), k.outDirs...) {
		if d != 0 && d != 1 {
			a.Fail("a scan direction is %d, want 0 (forward) or 1 (backward)", d)
		}
	}
	if n.Since < 11 {
		for _, x := range append(append([]int{}, k.inAxes...), k.outAxes...) {
			if x < 0 {
				a.Fail("a scan axis is %d: negative axes came with version 11", x)
			}
		}
	}
	return k, nil
}

// dropAxis is shape without its axis ax.
func dropAxis(shape []int, ax int) []int {
	return append(append([]int{}, shape[:ax]...), shape[ax+1:]...)
}

// insertAxis is shape with n inserted at axis ax.
func insertAxis(shape []int, ax, n int) []int {
	out := append(append([]int{}, shape[:ax]...), n)
	return append(out, shape[ax:]...)
}

// seqLen checks the shapes of one scan (version 8: one batch entry's, the
// batch axis dropped) and returns the sequence length and the scan
// inputs' axes made positive.
func (k *scanOp) seqLen(scanShapes [][]int) (int, []int, error) {
	axes := make([]int, k.scans)
	seq := -1
	for i, s := range scanShapes {
		ax, err := NormAxis(k.inAxes[i], len(s))
		if err != nil {
			return 0, nil, fmt.Errorf("scan input %d: %w", i, err)
		}
		axes[i] = ax
		switch {
		case seq < 0:
			seq = s[ax]
		case s[ax] != seq:
			return 0, nil, fmt.Errorf("scan input %d has %d elements along its scan axis, scan input 0 has %d", i, s[ax], seq)
		}
	}
	return seq, axes, nil
}

func (k *scanOp) Infer(in []Meta) ([]Meta, error) {
	own := in[:k.nIn]
	batch := 0
	states := make([]Meta, k.states)
	scanShapes := make([][]int, k.scans)
	for i := range states {
		v := own[k.stateFirst+i]
		states[i] = Meta{Type: v.Type, Shape: v.Shape}
	}
	for i := range scanShapes {
		scanShapes[i] = own[k.scanFirst+i].Shape
	}
	if k.v8 {
		var err error
		if batch, states, scanShapes, err = k.unbatch(own, states, scanShapes); err != nil {
			return nil, err
		}
	}
	seq, axes, err := k.seqLen(scanShapes)
	if err != nil {
		return nil, err
	}
	formal := append([]Meta{}, states...)
	for i, s := range scanShapes {
		formal = append(formal, Meta{Type: own[k.scanFirst+i].Type, Shape: dropAxis(s, axes[i])})
	}
	body, err := k.body.infer(subInputs(k.body, formal, in[k.nIn:]))
	if err != nil {
		return nil, err
	}
	out := make([]Meta, k.states+k.outs)
	for i, s := range states {
		b := body[i]
		if b.Type != s.Type || !nd.SameShape(b.Shape, s.Shape) {
			return nil, fmt.Errorf("state %d is %v and the body gives %v (a state keeps its type and shape)", i, s, b)
		}
		out[i] = s
	}
	for j := range k.outs {
		b := body[k.states+j]
		ax, err := NormAxis(k.outAxes[j], len(b.Shape)+1)
		if err != nil {
			return nil, fmt.Errorf("scan output %d: %w", j, err)
		}
		out[k.states+j] = Meta{Type: b.Type, Shape: insertAxis(b.Shape, ax, seq)}
	}
	if k.v8 {
		for i := range out {
			out[i].Shape = insertAxis(out[i].Shape, 0, batch)
		}
	}
	return out, nil
}

// unbatch checks version 8's batch axis and drops it from the shapes.
func (k *scanOp) unbatch(own []Meta, states []Meta, scanShapes [][]int) (int, []Meta, [][]int, error) {
	batch := -1
	check := func(what string, i int, s []int) error {
		switch {
		case len(s) == 0:
			return fmt.Errorf("%s %d is a scalar: version 8 takes a batch axis first", what, i)
		case batch < 0:
			batch = s[0]
		case s[0] != batch:
			return fmt.Errorf("%s %d has a batch of %d, another input %d", what, i, s[0], batch)
		}
		return nil
	}
	outStates := make([]Meta, len(states))
	for i, s := range states {
		if err := check("state", i, s.Shape); err != nil {
			return 0, nil, nil, err
		}
		outStates[i] = Meta{Type: s.Type, Shape: s.Shape[1:]}
	}
	out := make([][]int, len(scanShapes))
	for i, s := range scanShapes {
		if err := check("scan input", i, s); err != nil {
			return 0, nil, nil, err
		}
		out[i] = s[1:]
	}
	if l := own[0]; l.Type != nd.Undefined {
		if l.Type != nd.Int32 || len(l.Shape) != 1 || l.Shape[0] != batch {
			return 0, nil, nil, fmt.Errorf("sequence_lens is %v, want int32[%d]", l, batch)
		}
	}
	return batch, outStates, out, nil
}

func (k *scanOp) Run(in, out []nd.Array) error {
	mem, err := newMemory(0)
	if err != nil {
		return err
	}
	return k.runIn(mem, in, out)
}

// runIn is Run within a run's memory (its budget, its context).
func (k *scanOp) runIn(mem *memory, in, out []nd.Array) error {
	own, outer := in[:k.nIn], in[k.nIn:]
	states := own[k.stateFirst:k.scanFirst]
	scans := own[k.scanFirst:]
	if !k.v8 {
		return k.scan(states, scans, out, outer, mem)
	}
	batch := out[0].Shape[0]
	if l := own[0]; l.Type != nd.Undefined {
		seq := scans[0].Shape[1]
		for b, n := range nd.MustAs[int32](l) {
			if int(n) != seq {
				return fmt.Errorf("sequence_lens[%d] is %d: the runtime takes only full sequences (%d)", b, n, seq)
			}
		}
	}
	for b := range batch {
		bs := make([]nd.Array, len(states))
		for i, s := range states {
			bs[i] = take(s, 0, b)
		}
		bx := make([]nd.Array, len(scans))
		for i, s := range scans {
			bx[i] = take(s, 0, b)
		}
		bo := make([]nd.Array, len(out))
		for i, o := range out {
			bo[i] = nd.Zeros(o.Type, o.Shape[1:]...)
		}
		if err := k.scan(bs, bx, bo, outer, mem); err != nil {
			return fmt.Errorf("batch entry %d: %w", b, err)
		}
		for i, o := range bo {
			put(out[i], 0, b, o)
		}
	}
	return nil
}

// scan runs one scan: states and scan inputs (version 8: one batch
// entry's), into out, arrays of the shapes planned.
func (k *scanOp) scan(states, scans, out, outer []nd.Array, mem *memory) error {
	shapes := make([][]int, len(scans))
	for i, s := range scans {
		shapes[i] = s.Shape
	}
	seq, axes, err := k.seqLen(shapes)
	if err != nil {
		return err
	}
	if done, err := k.scanInto(states, scans, out, outer, seq, axes, mem); done || err != nil {
		return err
	}
	cur := append([]nd.Array{}, states...)
	base := mem.held
	for t := range seq {
		formal := append([]nd.Array{}, cur...)
		for i, s := range scans {
			at := t
			if k.inDirs[i] == 1 {
				at = seq - 1 - t
			}
			formal = append(formal, take(s, axes[i], at))
		}
		res, err := k.body.run(subInputs(k.body, formal, outer), mem)
		if err != nil {
			return fmt.Errorf("iteration %d: %w", t, err)
		}
		cur = res[:k.states]
		for j := range k.outs {
			o, r := out[k.states+j], res[k.states+j]
			ax, _ := NormAxis(k.outAxes[j], len(o.Shape))
			if r.Type != o.Type || !nd.SameShape(r.Shape, dropAxis(o.Shape, ax)) {
				return fmt.Errorf("iteration %d: scan output %d is %v%s, the plan is for %v%s", t, j, r.Type, nd.ShapeString(r.Shape), o.Type, nd.ShapeString(dropAxis(o.Shape, ax)))
			}
			at := t
			if k.outDirs[j] == 1 {
				at = seq - 1 - t
			}
			put(o, ax, at, r)
		}
		mem.held = base + bytesOf(cur...) // the outputs are the node's, held by the run already
	}
	for i, c := range cur {
		if err := copyInto(out[i], c, fmt.Sprintf("state %d", i)); err != nil {
			return err
		}
	}
	return nil
}

// scanInto is scan where the body's plan holds for every iteration: its
// shapes are the iterations' (no input read as a shape, no node shaped by
// the data) and its states keep their shapes. It plans the body once and
// runs it into buffers of its own: the states in two that take turns, a
// scan output along axis 0 straight into the node's output, and a scan
// input along axis 0 read where it lies. done is false, and nothing run,
// where the plan does not hold (scan then plans each iteration).
func (k *scanOp) scanInto(states, scans, out, outer []nd.Array, seq int, axes []int, mem *memory) (done bool, err error) {
	if seq == 0 {
		return false, nil
	}
	formal := make([]nd.Array, len(states)+len(scans))
	copy(formal, states)
	for i, s := range scans {
		formal[len(states)+i] = take(s, axes[i], 0)
	}
	in := subInputs(k.body, formal, outer)
	p, err := k.body.m.plan(in, mem.budget)
	if err != nil || p.stop != nil || slices.Contains(p.keyed, true) {
		return false, nil
	}
	metas, err := p.OutputMeta()
	if err != nil {
		return false, nil
	}
	for i, st := range states {
		if metas[i].Type != st.Type || !nd.SameShape(metas[i].Shape, st.Shape) {
			return false, nil
		}
	}
	for j := range k.outs {
		o := out[k.states+j]
		ax, _ := NormAxis(k.outAxes[j], len(o.Shape))
		if metas[k.states+j].Type != o.Type || !nd.SameShape(metas[k.states+j].Shape, dropAxis(o.Shape, ax)) {
			return false, nil
		}
	}
	// The buffers: two sets of states, and a scan output's where it is
	// not along axis 0.
	var bufs [2][]nd.Array
	for b := range bufs {
		bufs[b] = make([]nd.Array, len(metas))
		for i := range k.states {
			if bufs[b][i], err = mem.array(metas[i].Type, metas[i].Shape, nil, func() string { return fmt.Sprintf("Scan state %d", i) }); err != nil {
				return true, err
			}
		}
	}
	for j := range k.outs {
		if ax, _ := NormAxis(k.outAxes[j], len(out[k.states+j].Shape)); ax != 0 {
			mt := metas[k.states+j]
			a, err := mem.array(mt.Type, mt.Shape, nil, func() string { return fmt.Sprintf("Scan output %d", j) })
			if err != nil {
				return true, err
			}
			bufs[0][k.states+j], bufs[1][k.states+j] = a, a
		}
	}
	cur, base := states, mem.held
	for t := range seq {
		copy(formal, cur)
		for i, s := range scans {
			at := t
			if k.inDirs[i] == 1 {
				at = seq - 1 - t
			}
			if axes[i] == 0 {
				formal[len(states)+i] = row(s, at)
			} else {
				formal[len(states)+i] = take(s, axes[i], at)
			}
			in[len(states)+i] = formal[len(states)+i]
		}
		copy(in, formal[:len(states)])
		res := bufs[t%2]
		for j := range k.outs {
			o := out[k.states+j]
			at := t
			if k.outDirs[j] == 1 {
				at = seq - 1 - t
			}
			if ax, _ := NormAxis(k.outAxes[j], len(o.Shape)); ax == 0 {
				res[k.states+j] = row(o, at)
			}
		}
		if _, err := p.run(in, res, mem); err != nil {
			return true, fmt.Errorf("iteration %d: graph %q: %w", t, k.body.m.Name, err)
		}
		for j := range k.outs {
			o := out[k.states+j]
			if ax, _ := NormAxis(k.outAxes[j], len(o.Shape)); ax != 0 {
				at := t
				if k.outDirs[j] == 1 {
					at = seq - 1 - t
				}
				put(o, ax, at, res[k.states+j])
			}
		}
		cur = res[:k.states]
		mem.held = base // a run's workspace is its plan's, given back
	}
	for i, c := range cur {
		copy(out[i].Data, c.Data)
	}
	return true, nil
}

// row is a's element i along axis 0: a view of its data.
func row(a nd.Array, i int) nd.Array {
	shape := a.Shape[1:]
	n := len(a.Data) / max(a.Shape[0], 1)
	return nd.Array{Type: a.Type, Shape: shape, Data: a.Data[i*n : (i+1)*n : (i+1)*n]}
}

// take returns a's element at index i of axis ax: a new array, the axis
// dropped.
func take(a nd.Array, ax, i int) nd.Array {
	o := nd.Zeros(a.Type, dropAxis(a.Shape, ax)...)
	outer, inner := numel(a.Shape[:ax]), numel(a.Shape[ax+1:])*a.Type.Size()
	n := a.Shape[ax]
	for j := range outer {
		copy(o.Data[j*inner:(j+1)*inner], a.Data[(j*n+i)*inner:])
	}
	return o
}

// put writes p at index i of axis ax of o (p's shape is o's without ax).
func put(o nd.Array, ax, i int, p nd.Array) {
	outer, inner := numel(o.Shape[:ax]), numel(o.Shape[ax+1:])*o.Type.Size()
	n := o.Shape[ax]
	for j := range outer {
		copy(o.Data[(j*n+i)*inner:(j*n+i+1)*inner], p.Data[j*inner:(j+1)*inner])
	}
}
