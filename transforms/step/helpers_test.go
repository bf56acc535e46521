package step_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/beamgpu/beamgpu/transforms/wire"
)

func TestMain(m *testing.M) {
	steptest.MaybeServe() // this test binary is also the tests' GPU executor
	os.Exit(m.Run())
}

// vec is the batch of these tests' steps: a named vector. It names itself
// in failures, belongs to a unit of work, and reports its size.
type vec struct {
	Name string
	X    []float32
}

func (v vec) ID() string  { return v.Name }
func (v vec) Key() string { return "unit-" + v.Name }
func (v vec) Items() int  { return len(v.X) }
func (v vec) Bytes() int  { return 4 * len(v.X) }
func (v vec) half() (vec, vec) {
	n := len(v.X) / 2
	return vec{v.Name + "a", v.X[:n]}, vec{v.Name + "b", v.X[n:]}
}

// vecCodec moves a vec: its name in the header, its values as one array.
var vecCodec = step.Codec[vec]{
	Encode: func(v vec) (step.Parts, error) {
		return step.Parts{Header: wire.AppendString(nil, v.Name), Arrays: [][]byte{wire.Array(v.X)}}, nil
	},
	Decode: func(p step.Parts) (vec, error) {
		d := wire.NewDecoder(p.Header, "vec")
		name := d.String()
		if err := d.Done(); err != nil {
			return vec{}, err
		}
		if len(p.Arrays) != 1 {
			return vec{}, fmt.Errorf("vec: %d arrays, want 1", len(p.Arrays))
		}
		x, err := wire.View[float32](p.Arrays[0], len(p.Arrays[0])/4, "vec")
		return vec{Name: name, X: x}, err
	},
}

// scale doubles every value; a vector named "bad" fails, one named "panic"
// panics.
func scale(v vec) (vec, error) {
	switch v.Name {
	case "bad":
		return vec{}, errors.New("bad vector")
	case "panic":
		panic("the step broke")
	}
	out := vec{Name: v.Name, X: make([]float32, len(v.X))}
	for i, x := range v.X {
		out.X[i] = 2 * x
	}
	return out, nil
}

// stepScale is a step with a GPU op that can split its batches.
var stepScale = step.Register(step.Def[vec, vec]{
	Name: "test_scale",
	Doc:  "double every value",
	CPU:  scale,
	GPU: &step.GPU[vec, vec]{Op: "test.scale", In: vecCodec, Out: vecCodec,
		Split: func(v vec) (vec, vec, bool) {
			if len(v.X) < 2 {
				return v, v, false
			}
			a, b := v.half()
			return a, b, true
		},
		Merge: func(a, b vec) (vec, error) { return vec{Name: a.Name[:len(a.Name)-1], X: append(a.X, b.X...)}, nil },
	},
	Sample: func() vec { return vec{Name: "sample", X: []float32{1, 2, 3}} },
	Random: func(seed uint64) vec { return vec{Name: fmt.Sprint("r", seed), X: make([]float32, 1+seed%7)} },
})

// stepNoSplit is scale with a GPU op that cannot split its batches.
var stepNoSplit = step.Register(step.Def[vec, vec]{Name: "test_no_split", CPU: scale, Sample: stepScale.Def().Sample,
	GPU: &step.GPU[vec, vec]{Op: "test.no_split", In: vecCodec, Out: vecCodec}})

// stepCPUOnly has no GPU op and no stub.
var stepCPUOnly = step.Register(step.Def[vec, vec]{
	Name:   "test_cpu_only",
	CPU:    scale,
	Sample: func() vec { return vec{Name: "sample", X: []float32{1}} },
})

func init() {
	step.RegisterStub(stepScale, func(v vec) (vec, error) { return vec{Name: v.Name, X: make([]float32, len(v.X))}, nil })
}

// shifted is a vec with an offset many batches share: the side data of
// stepShift.
type shifted struct {
	V   vec
	Off *vec
}

// failedOnce holds the names of the "once:" vectors shift has failed, in
// the process that ran it (the executor's).
var failedOnce sync.Map

// shift adds the offset to every value. A vector whose name starts with
// "once:" fails with the rest of its name as the error the first time the
// process sees it, and succeeds after: a request sent again would hide the
// error.
func shift(s shifted) (vec, error) {
	if msg, ok := strings.CutPrefix(s.V.Name, "once:"); ok {
		if _, seen := failedOnce.LoadOrStore(s.V.Name, true); !seen {
			return vec{}, errors.New(msg)
		}
	}
	if s.Off == nil || len(s.Off.X) != len(s.V.X) {
		return vec{}, fmt.Errorf("%s: no offset of %d values", s.V.Name, len(s.V.X))
	}
	out := vec{Name: s.V.Name, X: make([]float32, len(s.V.X))}
	for i, x := range s.V.X {
		out.X[i] = x + s.Off.X[i]
	}
	return out, nil
}

// stepShift is a step whose GPU op takes side data: the offset crosses to
// the executor once, and requests after that only name it.
var stepShift = step.Register(step.Def[shifted, vec]{
	Name: "test_shift",
	CPU:  shift,
	GPU: &step.GPU[shifted, vec]{Op: "test.shift", Out: vecCodec,
		In: step.Codec[shifted]{
			Encode: func(s shifted) (step.Parts, error) { return vecCodec.Encode(s.V) },
			Decode: func(p step.Parts) (shifted, error) {
				v, err := vecCodec.Decode(p)
				return shifted{V: v}, err
			},
		},
		Side: &step.Side[shifted]{
			Of: func(s shifted) any {
				if s.Off == nil {
					return nil
				}
				return s.Off
			},
			Encode: func(s shifted) (step.Parts, error) { return vecCodec.Encode(*s.Off) },
			Decode: func(p step.Parts) (any, error) {
				v, err := vecCodec.Decode(p)
				return &v, err
			},
			With: func(s shifted, side any) (shifted, error) {
				s.Off = side.(*vec)
				return s, nil
			},
		},
	},
	Sample: func() shifted {
		return shifted{V: vec{Name: "sample", X: []float32{1, 2}}, Off: &vec{Name: "off", X: []float32{10, 20}}}
	},
})
