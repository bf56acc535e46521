package onnx

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// On the GPU executor a model runs the same plan as on the CPU (plan.go),
// each step a launch on the device (RunDevice): the model's weights are
// resident device memory, uploaded once per model and kept (gpu.Call's
// Resident, within the executor's memory budget); the values the plan
// computed while planning are resident too, once per plan; the inputs go up
// in one copy each and the outputs come down in one, into the response's
// memory; every intermediate value lies in one device workspace, at the
// offsets the plan gave it on the CPU.
//
// A Kernel with a GPU implementation implements Launcher. A launch that has
// no kernel for its inputs (a type or a rank the kernels do not take)
// returns ErrOnHost, and that one node runs on the host: its inputs come
// down, its CPU code runs, its outputs go up (RunDevice reports it). The
// tests hold the exported models of the repository to none.

// DevArray is a value on the device: its type, its shape and its address.
type DevArray struct {
	Type  nd.DType
	Shape []int
	Ptr   gpu.Ptr
	// Host is the value itself where it is known before the run (a
	// weight, a constant, a shape): launches read the inputs that
	// configure them (axes, pads, bounds) from it.
	Host *nd.Array
}

// Len is the number of elements.
func (a DevArray) Len() int { return numel(a.Shape) }

// Bytes is the size of the data.
func (a DevArray) Bytes() int64 { return int64(a.Len() * a.Type.Size()) }

// Defined reports whether the array is there (not a left-out optional
// input or output).
func (a DevArray) Defined() bool { return a.Type != nd.Undefined }

// Device is what a kernel's Launch runs with: the batch's call on the
// device (gpu.Call: buffers, launches of the family's kernels, cuBLAS).
type Device struct {
	Call gpu.Call
	// flag is a word on the device that kernels set when an input is out
	// of their domain (an index out of range): the run then checks it and
	// leaves the batch to the CPU, for its error.
	flag gpu.Ptr
	// scratch is device memory for a launch's temporaries (scratch).
	scratchPtr  gpu.Ptr
	scratchSize int64
	// aside is device memory for an input copied aside (aside).
	asidePtr  gpu.Ptr
	asideSize int64
	// mem is the run's host memory, node the node launched (named where
	// its host copies are over the budget).
	mem  *memory
	node *node
}

// ErrOnHost is what Launch returns when it has no kernel for its inputs:
// the node then runs on the host.
var ErrOnHost = errors.New("onnx: no device kernel for these inputs")

// Launcher is a Kernel with a GPU implementation.
type Launcher interface {
	// Launch enqueues the node's work on the device: out holds device
	// buffers of the types and shapes Infer gave (views where the Kernel is
	// a Viewer), in the inputs'. It returns ErrOnHost, having enqueued
	// nothing, when it has no kernel for these inputs.
	Launch(d *Device, in, out []DevArray) error
}

// OpsWithoutGPU returns the operators of the model's nodes that have no
// GPU implementation (sorted, each once): a model with none runs on the GPU
// executor's device (nodes of types a kernel does not take on the host,
// see RunDevice).
func (m *Model) OpsWithoutGPU() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range m.g.nodes {
		if _, ok := n.kernel.(Launcher); !ok && !seen[n.Op] {
			seen[n.Op] = true
			out = append(out, n.Op)
		}
	}
	sortStrings(out)
	return out
}

// DeviceRun describes a run on the device.
type DeviceRun struct {
	// OnHost lists the steps that ran on the host ("Op name"): nodes whose
	// kernels do not take their inputs on the device.
	OnHost []string
	// Between lists the nodes computed on the host between plans ("Op
	// name"): nodes whose outputs' shapes come from the data, at which a
	// plan ends (the values the rest reads came down for them).
	Between []string
}

// ErrIndexRange is RunDevice's report of an input out of a kernel's domain
// (Gather's indices out of range): a kernel cannot return an error, so the
// caller runs the batch on the CPU for its message.
var ErrIndexRange = errors.New("onnx: an index out of range on the device")

// RunDevice computes the plan's model on inputs of its shapes on the device
// of c. Its outputs lie in memory from c.Output (the response's). An input
// out of a kernel's domain (Gather's indices out of range) is reported
// after the run as an error: the caller runs the batch on the CPU for its
// message.
func (p *Plan) RunDevice(c gpu.Call, inputs []nd.Array) (outs []nd.Array, run DeviceRun, err error) {
	defer func() {
		if len(run.OnHost) > 0 {
			p.hostOnce.Do(func() {
				slog.Warn("onnx: nodes ran on the host (types the device kernels do not take)",
					"model", p.m.Name, "inputs", shapesOf(inputs), "nodes", run.OnHost)
			})
		}
	}()
	mem, err := newMemory(0)
	if err != nil {
		return nil, run, err
	}
	inputs, err = p.checkInputs(inputs, mem)
	if err != nil {
		return nil, run, err
	}
	outs, err = p.execDevice(c, inputs, mem, &run)
	if err != nil || p.stop == nil {
		return outs, run, err
	}
	// The plan ends early (plan.go): its outputs came down to the host; the
	// rest of the model runs on the device from them, planned for their
	// shapes.
	outs, err = p.handOn(outs, mem, func(q *Plan, in []nd.Array) ([]nd.Array, error) {
		return q.execDevice(c, in, mem, &run)
	}, func(n *node) { run.Between = append(run.Between, n.Op+" "+n.Name) })
	return outs, run, err
}

// execDevice runs the plan's steps on the device from inputs (checked) and
// returns its outputs: the model's, in the call's result memory, or, where
// the plan ends early, the values it hands on, in the run's host memory.
func (p *Plan) execDevice(c gpu.Call, inputs []nd.Array, mem *memory, run *DeviceRun) (outs []nd.Array, err error) {
	d := &Device{Call: c, mem: mem}
	vals := make([]DevArray, len(p.vals))
	weights, err := p.m.residentWeights(c)
	if err != nil {
		return nil, err
	}
	consts, err := p.residentConsts(c)
	if err != nil {
		return nil, err
	}
	var work gpu.Ptr
	if p.work > 0 {
		if work, err = c.Alloc(int64(p.work)); err != nil {
			return nil, err
		}
	}
	for i, v := range p.vals {
		a := DevArray{Type: v.meta.Type, Shape: v.meta.Shape, Host: v.meta.Value}
		switch v.st {
		case stConst:
			if off, ok := p.m.weightAt[i]; ok && p.m.g.values[i].init == v.meta.Value {
				a.Ptr = weights.Offset(off)
			} else if off, ok := p.constAt[i]; ok {
				a.Ptr = consts.Offset(off)
			}
		case stWork:
			a.Ptr = work.Offset(int64(v.off))
		case stOutput:
			if a.Bytes() > 0 {
				if a.Ptr, err = c.Alloc(a.Bytes()); err != nil {
					return nil, err
				}
			}
		}
		vals[i] = a
	}
	for k, id := range p.inputs {
		if len(inputs[k].Data) > 0 {
			if vals[id].Ptr, err = c.Upload(inputs[k].Data); err != nil {
				return nil, err
			}
		}
	}
	for _, s := range p.steps {
		in := make([]DevArray, len(s.in))
		for i, id := range s.in {
			if id >= 0 {
				in[i] = vals[id]
			}
		}
		out := make([]DevArray, len(s.out))
		var copies [][2]int // outputs that the kernel views but that are graph outputs
		viewer, _ := s.n.kernel.(Viewer)
		for i, id := range s.out {
			if id < 0 {
				continue
			}
			if p.vals[id].st == stView {
				vals[id].Ptr = in[p.vals[id].in].Ptr
			} else if viewer != nil {
				if j, ok := viewer.View(i); ok {
					copies = append(copies, [2]int{i, j})
				}
			}
			out[i] = vals[id]
		}
		err := ErrOnHost
		d.node = s.n
		if l, ok := s.n.kernel.(Launcher); ok {
			err = l.Launch(d, in, out)
		}
		if errors.Is(err, ErrOnHost) {
			run.OnHost = append(run.OnHost, s.n.Op+" "+s.n.Name)
			n := s.n
			if l, ok := n.kernel.(interface{ nchw() Kernel }); ok { // a step of the CPU's layout: the device's values are NCHW
				n = &node{Node: n.Node, kernel: l.nchw()}
			}
			err = hostStep(d, n, in, out)
		}
		var me *MemoryError
		if err != nil && !errors.As(err, &me) { // a MemoryError names its node
			return nil, fmt.Errorf("%s: %w", s.n.label(), err)
		} else if err != nil {
			return nil, err
		}
		for _, cp := range copies {
			if n := out[cp[0]].Bytes(); n > 0 {
				if err := c.CopyDevice(out[cp[0]].Ptr, in[cp[1]].Ptr, n); err != nil {
					return nil, err
				}
			}
		}
	}
	outs = make([]nd.Array, len(p.outputs))
	for i, id := range p.outputs {
		v := p.vals[id]
		switch v.st {
		case stConst:
			outs[i] = v.meta.Value.Clone()
		case stInput:
			outs[i] = inputs[indexOf(p.inputs, id)].Clone()
		default:
			a := vals[id]
			host, err := outputMemory(c, a.Type, a.Shape)
			if p.stop != nil { // handed on: the run's memory
				host, err = mem.array(a.Type, a.Shape, v.by, p.valueWhat(id))
			}
			if err != nil {
				return nil, err
			}
			if n := a.Bytes(); n > 0 {
				if err := c.Download(host.Data, a.Ptr); err != nil {
					return nil, err
				}
			}
			outs[i] = host
		}
	}
	if d.flag != 0 {
		flag := make([]uint32, 1)
		if err := gpu.Download(c, flag, d.flag); err != nil {
			return nil, err
		}
		if err := c.Sync(); err != nil {
			return nil, err
		}
		if flag[0] != 0 {
			return nil, ErrIndexRange
		}
	}
	if p.stop != nil {
		return outs, c.Sync() // the downloads are in place
	}
	for i := range outs {
		if want := p.m.Outputs[i].Type; want != outs[i].Type {
			if internal(want) != outs[i].Type {
				return nil, fmt.Errorf("output %q is %v, the model declares %v", p.m.Outputs[i].Name, outs[i].Type, want)
			}
			if err := c.Sync(); err != nil { // the download is in place
				return nil, err
			}
			outs[i], _ = nd.Convert(outs[i], want)
		}
	}
	return outs, nil
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// outputMemory is an array of t and shape in the call's result memory
// (8-byte aligned, as nd's arrays are).
func outputMemory(c gpu.Call, t nd.DType, shape []int) (nd.Array, error) {
	n := numel(shape) * t.Size()
	words, err := gpu.Output[int64](c, (n+7)/8)
	if err != nil {
		return nd.Array{}, err
	}
	var data []byte
	if n > 0 {
		data = gpu.Bytes(words)[:n:n]
	}
	return nd.Array{Type: t, Shape: shape, Data: data}, nil
}

// hostStep runs node n's CPU code on the host: its inputs come down, its
// outputs go up.
func hostStep(d *Device, n *node, in, out []DevArray) error {
	c := d.Call
	hin := make([]nd.Array, len(in))
	for i, a := range in {
		switch {
		case !a.Defined():
		case a.Host != nil:
			hin[i] = *a.Host
		default:
			h, err := d.mem.array(a.Type, a.Shape, n, func() string { return fmt.Sprintf("the host copy of input %q", n.Inputs[i]) })
			if err != nil {
				return err
			}
			if len(h.Data) > 0 {
				if err := c.Download(h.Data, a.Ptr); err != nil {
					return err
				}
			}
			hin[i] = h
		}
	}
	if err := c.Sync(); err != nil {
		return err
	}
	return runOnHost(d, n.kernel, hin, out)
}

// runOnHost runs k's CPU code on the host inputs hin and copies its outputs
// up into out's device buffers.
func runOnHost(d *Device, k Kernel, hin []nd.Array, out []DevArray) error {
	c := d.Call
	hout := make([]nd.Array, len(out))
	for i, a := range out {
		if a.Defined() {
			h, err := d.hostArray(a, i)
			if err != nil {
				return err
			}
			hout[i] = h
		}
	}
	if v, ok := k.(Viewer); ok { // a view's data is its input's
		for i := range hout {
			if j, ok := v.View(i); ok && hout[i].Type != nd.Undefined {
				copy(hout[i].Data, hin[j].Data)
			}
		}
	}
	if err := runKernel(k, d.mem, hin, hout); err != nil {
		return err
	}
	for i, a := range out {
		if a.Defined() && len(hout[i].Data) > 0 {
			if err := c.Copy(a.Ptr, hout[i].Data); err != nil {
				return err
			}
		}
	}
	return nil
}

// hostArray is host memory for output i of the node launched, within the
// run's budget.
func (d *Device) hostArray(a DevArray, i int) (nd.Array, error) {
	mem, n := d.mem, d.node
	if mem == nil { // a Device made outside RunDevice
		var err error
		if mem, err = newMemory(0); err != nil {
			return nd.Array{}, err
		}
	}
	what := func() string { return fmt.Sprintf("the host copy of output %d", i) }
	if n != nil && i < len(n.Outputs) {
		what = func() string { return fmt.Sprintf("the host copy of output %q", n.Outputs[i]) }
	}
	return mem.array(a.Type, a.Shape, n, what)
}

// checkInputs checks inputs against the plan's input types and shapes,
// widening Float16 and BFloat16 inputs to the Float32 the runtime computes
// in (within mem's budget).
func (p *Plan) checkInputs(inputs []nd.Array, mem *memory) ([]nd.Array, error) {
	out := make([]nd.Array, len(p.inputs))
	return out, p.checkInputsInto(out, inputs, mem)
}

// devLayout places arrays one after another in one device block, each at
// a 256-byte boundary (as cudaMalloc's).
type devLayout struct {
	at   map[int]int64
	size int64
}

func (l *devLayout) add(id int, a *nd.Array) {
	if l.at == nil {
		l.at = map[int]int64{}
	}
	if len(a.Data) == 0 {
		return
	}
	l.at[id] = l.size
	l.size += (int64(len(a.Data)) + 255) &^ 255
}

// fill writes the arrays at their places in the block at p.
func (l *devLayout) fill(c gpu.Call, p gpu.Ptr, value func(id int) *nd.Array) error {
	for id, off := range l.at {
		if err := c.Copy(p.Offset(off), value(id).Data); err != nil {
			return err
		}
	}
	return nil
}

// weightsKey and constsKey key the resident data of a model and a plan.
type (
	weightsKey struct{ m *Model }
	constsKey  struct{ p *Plan }
)

// residentWeights returns the model's initializers on the device, in one
// block uploaded by the first call that needs them (and again after the
// executor's budget let them go).
func (m *Model) residentWeights(c gpu.Call) (gpu.Ptr, error) {
	m.weightsOnce.Do(func() {
		for i, v := range m.g.values {
			if v.init != nil {
				m.weights.add(i, v.init)
			}
		}
		m.weightAt = m.weights.at
	})
	if m.weights.size == 0 {
		return 0, nil
	}
	return c.Resident(weightsKey{m}, m.weights.size, func(c gpu.Call, p gpu.Ptr) error {
		return m.weights.fill(c, p, func(id int) *nd.Array { return m.g.values[id].init })
	})
}

// residentConsts returns the values the plan computed while planning that
// its steps read (shapes, folded constants), on the device.
func (p *Plan) residentConsts(c gpu.Call) (gpu.Ptr, error) {
	p.constsOnce.Do(func() {
		used := map[int]bool{}
		for _, s := range p.steps {
			for _, id := range s.in {
				if id >= 0 {
					used[id] = true
				}
			}
		}
		for id := range used {
			v := p.vals[id]
			if v.st == stConst && v.meta.Value != p.m.g.values[id].init {
				p.consts.add(id, v.meta.Value)
			}
		}
		p.constAt = p.consts.at
	})
	if p.consts.size == 0 {
		return 0, nil
	}
	return c.Resident(constsKey{p}, p.consts.size, func(c gpu.Call, ptr gpu.Ptr) error {
		return p.consts.fill(c, ptr, func(id int) *nd.Array { return p.vals[id].meta.Value })
	})
}

// deviceWeights and deviceConsts are what a model and a plan keep for the
// device.
type deviceWeights struct {
	weightsOnce sync.Once
	weights     devLayout
	weightAt    map[int]int64
}

type deviceConsts struct {
	hostOnce   sync.Once // the log of the nodes run on the host, once per plan
	constsOnce sync.Once
	consts     devLayout
	constAt    map[int]int64
}

// shapesOf writes arrays as "float32[8x3x224x224], int64[8]" for messages.
func shapesOf(arrays []nd.Array) string {
	s := make([]string, len(arrays))
	for i, a := range arrays {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}
