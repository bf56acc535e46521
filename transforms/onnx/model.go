package onnx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/step/files"
	"google.golang.org/protobuf/proto"
)

// MaxModelBytes bounds a model file (protobuf's own limit is 2 GiB; larger
// weights go in external data files).
const MaxModelBytes = 2 << 30

// Model is a loaded ONNX model: parsed, every node's operator found and its
// attributes checked, the graph sorted, and the parts that depend on the
// weights alone computed once (constant folding). It is safe for concurrent
// use; Run plans the graph once per input shape and keeps the plans.
//
// Float16 and BFloat16 weights and values are widened to float32 at load,
// and the model computes in float32: a Cast to Float16 rounds to half
// precision and keeps the result as float32; inputs declared Float16 take
// Float16 or Float32 arrays, and outputs declared Float16 are rounded back
// to Float16 at the end.
type Model struct {
	// ID identifies the model's content: "sha256:" and the first 16 bytes
	// of the SHA-256 of its file and external data, in hex.
	ID string
	// Name is the file's base name, or the graph's name.
	Name string
	// Opset is the model's opset version of the default domain.
	Opset int
	// IRVersion and Producer are what the file says (e.g. 8, "pytorch 1.13.1").
	IRVersion int64
	Producer  string
	// Inputs are the values a caller feeds, in the graph's order (graph
	// inputs that are not initializers); Outputs the values it returns.
	Inputs, Outputs []ValueInfo

	g             *graph
	plans         planCache
	deviceWeights // the weights' place on the device (gpu.go)
}

// ValueInfo is a graph input or output as the model declares it.
type ValueInfo struct {
	Name string
	Type nd.DType
	// Shape is the declared shape; nil when the model declares none.
	Shape []Dim
}

// Dim is a dimension of a declared shape: a size, or a name (a symbolic
// dimension such as "batch") with Size -1, or unknown (Size -1, no name).
type Dim struct {
	Size  int
	Param string
}

func (d Dim) String() string {
	switch {
	case d.Size >= 0:
		return strconv.Itoa(d.Size)
	case d.Param != "":
		return d.Param
	}
	return "?"
}

func (v ValueInfo) String() string {
	dims := make([]string, len(v.Shape))
	for i, d := range v.Shape {
		dims[i] = d.String()
	}
	if v.Shape == nil {
		return fmt.Sprintf("%s: %v (shape not declared)", v.Name, v.Type)
	}
	return fmt.Sprintf("%s: %v[%s]", v.Name, v.Type, strings.Join(dims, "x"))
}

// Load reads, checks and prepares the model at path: a local path or any
// path package files can open (gs://... in a pipeline). External data
// files are read relative to the model's directory, and none may lie
// outside it. Every error names the file and the reason.
func Load(ctx context.Context, name string) (*Model, error) {
	data, err := files.ReadAll(ctx, name, MaxModelBytes)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	m, err := parse(ctx, data, name, true)
	if err != nil {
		return nil, fmt.Errorf("onnx: %s: %w", name, err)
	}
	return m, nil
}

// Parse is Load for a model in memory, named name in errors; it refuses
// external data (there is no directory to read it from).
func Parse(data []byte, name string) (*Model, error) {
	m, err := parse(context.Background(), data, name, false)
	if err != nil {
		return nil, fmt.Errorf("onnx: %s: %w", name, err)
	}
	return m, nil
}

func parse(ctx context.Context, data []byte, name string, external bool) (*Model, error) {
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(data, &mp); err != nil {
		return nil, fmt.Errorf("not an ONNX model (protobuf: %v)", err)
	}
	if mp.Graph == nil {
		return nil, errors.New("not an ONNX model: no graph")
	}
	h := sha256.New()
	h.Write(data)
	if external {
		if err := readExternal(ctx, &mp, name, h); err != nil {
			return nil, err
		}
	} else if ext := firstExternal(mp.Graph); ext != "" {
		return nil, fmt.Errorf("initializer %q is in an external data file, which a model given as bytes cannot have", ext)
	}
	m, err := build(&mp)
	if err != nil {
		return nil, err
	}
	m.ID = "sha256:" + hex.EncodeToString(h.Sum(nil)[:16])
	m.Name = baseName(name)
	return m, nil
}

func baseName(name string) string {
	if i := strings.LastIndexAny(name, "/\\"); i >= 0 {
		return name[i+1:]
	}
	return name
}

func firstExternal(g *onnxpb.GraphProto) string {
	for _, t := range g.Initializer {
		if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
			return t.GetName()
		}
	}
	return ""
}

// readExternal reads the external data of the model's initializers into
// their raw_data, from files relative to the model's directory.
func readExternal(ctx context.Context, mp *onnxpb.ModelProto, modelPath string, h io.Writer) error {
	dir := dirOf(modelPath)
	opened := map[string]files.File{}
	defer func() {
		for _, f := range opened {
			f.Close()
		}
	}()
	for _, t := range mp.Graph.Initializer {
		if t.GetDataLocation() != onnxpb.TensorProto_EXTERNAL {
			continue
		}
		var loc string
		off, length := int64(0), int64(-1)
		for _, kv := range t.ExternalData {
			var err error
			switch kv.GetKey() {
			case "location":
				loc = kv.GetValue()
			case "offset":
				off, err = strconv.ParseInt(kv.GetValue(), 10, 64)
			case "length":
				length, err = strconv.ParseInt(kv.GetValue(), 10, 64)
			case "checksum":
			default:
				err = fmt.Errorf("unknown key %q", kv.GetKey())
			}
			if err != nil || off < 0 {
				return fmt.Errorf("initializer %q: external data %s: %v", t.GetName(), kv.GetKey(), err)
			}
		}
		full, err := externalPath(dir, loc)
		if err != nil {
			return fmt.Errorf("initializer %q: %w", t.GetName(), err)
		}
		f := opened[full]
		if f == nil {
			if f, err = files.OpenAt(ctx, full); err != nil {
				return fmt.Errorf("initializer %q: external data: %w", t.GetName(), err)
			}
			opened[full] = f
		}
		n, err := nd.Numel(dims(t.Dims))
		if err != nil {
			return fmt.Errorf("initializer %q: %w", t.GetName(), err)
		}
		want := int64(n) * int64(nd.DType(t.GetDataType()).Size())
		if length < 0 {
			length = f.Size() - off
		}
		if length != want || off > f.Size() || length > f.Size()-off {
			return fmt.Errorf("initializer %q: external data %s: %d bytes at offset %d of a %d-byte file, the tensor's %v needs %d",
				t.GetName(), loc, length, off, f.Size(), dims(t.Dims), want)
		}
		raw := nd.Bytes(int(length))
		if _, err := f.ReadAt(raw, off); err != nil {
			return fmt.Errorf("initializer %q: external data %s: %w", t.GetName(), loc, err)
		}
		h.Write(raw)
		t.RawData = raw
	}
	return nil
}

func dims(d []int64) []int {
	out := make([]int, len(d))
	for i, v := range d {
		if v < 0 || v > nd.MaxElements {
			v = -1
		}
		out[i] = int(v)
	}
	return out
}

// dirOf is the directory of a local path or a URL (gs://b/m.onnx -> gs://b).
func dirOf(p string) string {
	if strings.Contains(p, "://") {
		return path.Dir(p)
	}
	return filepath.Dir(p)
}

// externalPath resolves an external data location against the model's
// directory. The location must be a relative path that stays inside it:
// no absolute path, no "..", no URL; and a local file's real path (after
// symbolic links) must be inside the directory's.
func externalPath(dir, loc string) (string, error) {
	clean := path.Clean(strings.ReplaceAll(loc, "\\", "/"))
	switch {
	case loc == "":
		return "", errors.New("external data without a location")
	case strings.Contains(loc, "://"), path.IsAbs(clean), filepath.IsAbs(loc), clean == "..", strings.HasPrefix(clean, "../"), clean == ".":
		return "", fmt.Errorf("external data location %q is outside the model's directory", loc)
	}
	if strings.Contains(dir, "://") {
		return dir + "/" + clean, nil
	}
	full := filepath.Join(dir, filepath.FromSlash(clean))
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("external data: %w", err)
	}
	realFull, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("external data: %w", err)
	}
	if rel, err := filepath.Rel(realDir, realFull); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("external data location %q leads outside the model's directory (to %s)", loc, realFull)
	}
	return full, nil
}

// SizeBytes is the size of the model's weights in memory (its constants,
// after folding).
func (m *Model) SizeBytes() int64 {
	var n int64
	for _, v := range m.g.values {
		if v.init != nil {
			n += int64(len(v.init.Data))
		}
	}
	return n
}

// OpsUsed returns the operators the model's nodes use (after folding),
// sorted, each once.
func (m *Model) OpsUsed() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range m.g.nodes {
		if !seen[n.Op] {
			seen[n.Op] = true
			out = append(out, n.Op)
		}
	}
	sortStrings(out)
	return out
}

// Batched reports whether the model's first axis is a batch axis of free
// size: every input and output declares a shape of rank 1 or more whose
// first dimension is not a fixed size, with one name where it is named
// ("N", "batch_size"). The rows of such a model's inputs are taken to be
// independent, as exporters mean by a dynamic batch axis: a batch may be
// cut into parts along it and the parts' outputs joined (the GPU executor
// halves a batch it cannot hold; RunInference joins examples into one call).
func (m *Model) Batched() bool {
	name := ""
	for _, vs := range [][]ValueInfo{m.Inputs, m.Outputs} {
		for _, v := range vs {
			if len(v.Shape) == 0 || v.Shape[0].Size >= 0 {
				return false
			}
			if p := v.Shape[0].Param; p != "" {
				if name != "" && p != name {
					return false
				}
				name = p
			}
		}
	}
	return len(m.Inputs) > 0
}

// RandomInputs returns inputs for m drawn with seed: declared sizes as
// declared, every free dimension rows (1 where a shape is undeclared);
// floats normal, integers in [0, 4), booleans true three times in four.
func RandomInputs(m *Model, rows int, seed uint64) []nd.Array {
	r := rand.New(rand.NewPCG(seed, 18))
	out := make([]nd.Array, len(m.Inputs))
	for i, v := range m.Inputs {
		shape := []int{rows}
		if v.Shape != nil {
			shape = make([]int, len(v.Shape))
			for d, dim := range v.Shape {
				shape[d] = rows
				if dim.Size >= 0 {
					shape[d] = dim.Size
				}
			}
		}
		t := internal(v.Type)
		a := nd.Zeros(t, shape...)
		if t.IsFloat() {
			f := make([]float64, a.Len())
			for j := range f {
				f[j] = r.NormFloat64()
			}
			nd.ConvertInto(a, nd.Of(f, shape...))
		} else {
			f := make([]int64, a.Len())
			for j := range f {
				f[j] = int64(r.IntN(4))
			}
			nd.ConvertInto(a, nd.Of(f, shape...))
		}
		out[i] = a
	}
	return out
}
