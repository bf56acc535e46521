package onnx_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateOpsTable = flag.Bool("update-ops-table", false, "rewrite docs/inference.md's operator table from onnx.Ops()")

const opsDoc = "../../docs/inference.md"

// opsTable returns the operator table of docs/inference.md as it must read:
// a row per registered operator with the file that registers it (files,
// from opFiles), its opset versions, how it runs in a device call, and its
// conformance on the CPU.
//
// How it runs in a device call: "on the host" where no node of it has
// device code (onnx.HostOnlyOps: its CPU code runs inside the device call,
// inputs down and outputs up, or as the plan is made where its outputs'
// shapes come from input contents), otherwise "device kernel", with "some
// forms on the host" where some of its tests ran its node on the host (types
// the device kernels do not take). The counts are of ONNX's conformance
// tests and the package's own cases (testdata/ops, testdata/rnn) run on the
// emulated device: those that ran wholly on the device, of those that have
// the operator.
func opsTable(files map[string]string, cpu *Scoreboard, dev *deviceBoard) string {
	var b strings.Builder
	b.WriteString("| Operator | File | Opset versions | CPU | In a device call (tests wholly on the device / tests) | Conformance (passed / run, skipped) |\n|---|---|---|---|---|---|\n")
	for _, d := range onnx.Ops() {
		vs := make([]string, len(d.Versions))
		for i, v := range d.Versions {
			vs[i] = fmt.Sprint(v)
		}
		on, all, host := dev.Device[d.Name], dev.Device[d.Name]+dev.Host[d.Name], len(dev.HostIn[d.Name])
		var gpu string
		switch {
		case dev.HostOnly[d.Name]:
			gpu = fmt.Sprintf("**on the host** (0 / %d)", all)
		case all == 0:
			gpu = "untested (0 / 0)"
		case host == 0:
			gpu = fmt.Sprintf("device kernel (%d / %d)", on, all)
		case host == all:
			gpu = fmt.Sprintf("device kernel, its tests' forms on the host (%d / %d)", on, all)
		default:
			gpu = fmt.Sprintf("device kernel, some forms on the host (%d / %d)", on, all)
		}
		conf := fmt.Sprintf("%d / %d", cpu.Passed[d.Name], cpu.Run[d.Name])
		if n := cpu.Skipped[d.Name]; n > 0 {
			conf += fmt.Sprintf(", %d skipped", n)
		}
		fmt.Fprintf(&b, "| %s | [%s](../transforms/onnx/%s) | %s | yes | %s | %s |\n", d.Name, files[d.Name], files[d.Name],
			strings.Join(vs, ", "), gpu, conf)
	}
	return b.String()
}

// opFiles returns, for every registered operator, the file of this
// package that registers it and holds its CPU code: the file whose init
// calls RegisterOp and names the operator in a string (in the OpDef, or in
// a list that a loop registers). The registry does not know files, so the
// sources are read; an operator named in no file's init, or in several,
// fails the test.
func opFiles(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	named := map[string][]string{} // operator name -> files
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "init" || fn.Recv != nil || !registers(fn.Body) {
				continue
			}
			seen := map[string]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && !seen[s] {
						seen[s] = true
						named[s] = append(named[s], name)
					}
				}
				return true
			})
		}
	}
	files := map[string]string{}
	for _, d := range onnx.Ops() {
		switch in := named[d.Name]; len(in) {
		case 1:
			files[d.Name] = in[0]
		case 0:
			t.Errorf("operator %s: no init that calls RegisterOp names it: which file registers it?", d.Name)
		default:
			t.Errorf("operator %s: the inits of %s all name it: which file registers it?", d.Name, strings.Join(in, ", "))
		}
	}
	return files
}

// registers reports whether body calls RegisterOp.
func registers(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "RegisterOp" {
				found = true
			}
		}
		return !found
	})
	return found
}

var tableRe = regexp.MustCompile(`(?s)<!-- ops: go test ./transforms/onnx -run TestOpsTable -update-ops-table -->\n(.*?)<!-- /ops -->`)

// docs/inference.md lists every registered operator with its file, the
// opset versions it implements, how it runs in a device call and its
// conformance counts,
// and no other (go test ./transforms/onnx -run
// TestOpsTable -update-ops-table rewrites it).
func TestOpsTable(t *testing.T) {
	data, err := os.ReadFile(opsDoc)
	require.NoError(t, err)
	m := tableRe.FindSubmatchIndex(data)
	require.NotNil(t, m, "%s has no operator table between its markers", opsDoc)
	cpu, _, _, _ := cpuConformance(t)
	files := opFiles(t)
	dev := deviceConformance(t)
	addDeviceCases(t, dev)
	want := opsTable(files, cpu, dev)
	if *updateOpsTable {
		out := append(append(append([]byte{}, data[:m[2]]...), want...), data[m[3]:]...)
		require.NoError(t, os.WriteFile(opsDoc, out, 0o644))
		return
	}
	assert.Equal(t, want, string(data[m[2]:m[3]]), "the operator table of %s is not onnx.Ops()'s: go test ./transforms/onnx -run TestOpsTable -update-ops-table", opsDoc)
}

// addDeviceCases runs the package's own cases (testdata/ops and
// testdata/rnn, ONNX Runtime's outputs beside them) on the emulated device
// and counts them into b as deviceConformance counts ONNX's tests, so
// that the operators ONNX 1.12's data lacks (Gelu, Mish,
// GroupNormalization) are counted too. Their outputs are checked by
// TestOpCases and TestRecurrentCases.
func addDeviceCases(t *testing.T, b *deviceBoard) {
	dev := emulator(t)
	type devCase struct {
		name, model string
		inputs      []string
	}
	var cases []devCase
	for _, c := range opCases(t) {
		cases = append(cases, devCase{c.Name, c.Model, []string{c.Input}})
	}
	dirs, err := filepath.Glob(filepath.Join(rnnCasesDir, "*", "model.onnx"))
	require.NoError(t, err)
	for _, model := range dirs {
		ins, err := filepath.Glob(filepath.Join(filepath.Dir(model), "test_data_set_0", "input_*.pb"))
		require.NoError(t, err)
		sort.Strings(ins)
		cases = append(cases, devCase{filepath.Base(filepath.Dir(model)), model, ins})
	}
	for _, c := range cases {
		m, err := onnxtest.LoadFile(c.model)
		if err != nil { // past this runtime's opsets (groupnorm21): its test says so
			continue
		}
		var in []nd.Array
		for _, f := range c.inputs {
			in = append(in, onnxtest.ReadTensor(t, f))
		}
		for op, host := range onnx.HostOnlyOps(m) {
			prev, seen := b.HostOnly[op]
			b.HostOnly[op] = host && (prev || !seen) // every node of the operator's
		}
		_, onHost, err := runOnDevice(dev, m, in)
		require.NoError(t, err, c.name)
		for _, op := range m.OpsUsed() {
			if len(onHost) == 0 {
				b.Device[op]++
			} else {
				b.Host[op]++
			}
		}
		for _, s := range onHost {
			op, _, _ := strings.Cut(s, " ")
			if b.HostIn[op] == nil {
				b.HostIn[op] = map[string]bool{}
			}
			b.HostIn[op]["case "+c.name] = true
		}
	}
}
