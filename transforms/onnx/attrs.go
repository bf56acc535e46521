package onnx

import (
	"fmt"
	"sort"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
)

// Attrs are a node's attributes. Each getter returns the attribute's value,
// or its default when the node does not set it; an attribute of the wrong
// type is an error kept until Err (the first one), so that a kernel's New
// reads every attribute and checks once. The loader refuses a node with an
// attribute that its New did not read (or Ignore): an attribute the
// runtime would silently not honour.
type Attrs struct {
	byName map[string]*onnxpb.AttributeProto
	read   map[string]bool
	err    error
	// graphs are the GRAPH attributes, built (subgraph.go).
	graphs map[string]*subgraph
}

func newAttrs(list []*onnxpb.AttributeProto) (*Attrs, error) {
	a := &Attrs{byName: make(map[string]*onnxpb.AttributeProto, len(list)), read: map[string]bool{}}
	for _, p := range list {
		if p.GetRefAttrName() != "" {
			return nil, fmt.Errorf("attribute %q refers to a function's attribute: only model graphs are supported", p.GetName())
		}
		if _, dup := a.byName[p.GetName()]; dup {
			return nil, fmt.Errorf("attribute %q given twice", p.GetName())
		}
		a.byName[p.GetName()] = p
	}
	return a, nil
}

// NewAttrs returns attributes built from protos, for tests of kernels.
func NewAttrs(list ...*onnxpb.AttributeProto) *Attrs {
	a, err := newAttrs(list)
	if err != nil {
		panic(err)
	}
	return a
}

func (a *Attrs) get(name string, want onnxpb.AttributeProto_AttributeType) *onnxpb.AttributeProto {
	a.read[name] = true
	p, ok := a.byName[name]
	if !ok {
		return nil
	}
	// Old exporters leave the type out; infer it from the one field set.
	if t := p.GetType(); t != want && t != onnxpb.AttributeProto_UNDEFINED {
		a.fail("attribute %s is %v, want %v", name, t, want)
		return nil
	}
	return p
}

func (a *Attrs) fail(format string, args ...any) {
	if a.err == nil {
		a.err = fmt.Errorf(format, args...)
	}
}

// Fail records an error of the attributes (a value out of range), for Err.
func (a *Attrs) Fail(format string, args ...any) { a.fail(format, args...) }

// Has reports whether the node sets the attribute (and counts it as read).
func (a *Attrs) Has(name string) bool {
	a.read[name] = true
	_, ok := a.byName[name]
	return ok
}

// Int returns the int attribute name, or def.
func (a *Attrs) Int(name string, def int64) int64 {
	if p := a.get(name, onnxpb.AttributeProto_INT); p != nil {
		return p.GetI()
	}
	return def
}

// Flag returns the int attribute name, a flag of 0 or 1, as a bool, or def
// when the node does not set it; another value fails (Err).
func (a *Attrs) Flag(name string, def bool) bool {
	d := int64(0)
	if def {
		d = 1
	}
	switch v := a.Int(name, d); v {
	case 0, 1:
		return v == 1
	default:
		a.fail("attribute %s is %d, want 0 or 1", name, v)
		return def
	}
}

// Float returns the float attribute name, or def.
func (a *Attrs) Float(name string, def float32) float32 {
	if p := a.get(name, onnxpb.AttributeProto_FLOAT); p != nil {
		return p.GetF()
	}
	return def
}

// String returns the string attribute name, or def.
func (a *Attrs) String(name, def string) string {
	if p := a.get(name, onnxpb.AttributeProto_STRING); p != nil {
		return string(p.GetS())
	}
	return def
}

// Ints returns the ints attribute name, ok false when it is not set.
func (a *Attrs) Ints(name string) (v []int64, ok bool) {
	if p := a.get(name, onnxpb.AttributeProto_INTS); p != nil {
		return append([]int64{}, p.GetInts()...), true
	}
	return nil, false
}

// Floats returns the floats attribute name, ok false when it is not set.
func (a *Attrs) Floats(name string) (v []float32, ok bool) {
	if p := a.get(name, onnxpb.AttributeProto_FLOATS); p != nil {
		return append([]float32{}, p.GetFloats()...), true
	}
	return nil, false
}

// Strings returns the strings attribute name, ok false when it is not set.
func (a *Attrs) Strings(name string) (v []string, ok bool) {
	if p := a.get(name, onnxpb.AttributeProto_STRINGS); p != nil {
		for _, s := range p.GetStrings() {
			v = append(v, string(s))
		}
		return v, true
	}
	return nil, false
}

// Tensor returns the tensor attribute name (Float16 and BFloat16 widened
// to float32, as everywhere in a model), ok false when it is not set.
func (a *Attrs) Tensor(name string) (v nd.Array, ok bool) {
	p := a.get(name, onnxpb.AttributeProto_TENSOR)
	if p == nil {
		return nd.Array{}, false
	}
	if p.GetT() == nil {
		a.fail("attribute %s holds no tensor", name)
		return nd.Array{}, false
	}
	arr, err := ArrayOf(p.GetT(), "attribute "+name)
	if err != nil {
		a.fail("%v", err)
		return nd.Array{}, false
	}
	return widen(arr), true
}

// Ignore accepts attributes that the runtime reads but has no use for
// (BatchNormalization's momentum, old opsets' consumed_inputs).
func (a *Attrs) Ignore(names ...string) {
	for _, n := range names {
		a.read[n] = true
	}
}

// Err returns the first error met reading the attributes.
func (a *Attrs) Err() error { return a.err }

// unread returns the attributes set but never read, sorted.
func (a *Attrs) unread() []string {
	var out []string
	for n := range a.byName {
		if !a.read[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// OneOf fails unless v is one of allowed; name names the attribute.
func (a *Attrs) OneOf(name, v string, allowed ...string) {
	for _, x := range allowed {
		if v == x {
			return
		}
	}
	a.fail("attribute %s is %q, want one of %s", name, v, strings.Join(allowed, ", "))
}
