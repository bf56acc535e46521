package onnx_test

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateOpsTable = flag.Bool("update-ops-table", false, "rewrite docs/inference.md's operator table from onnx.Ops()")

const opsDoc = "../../docs/inference.md"

// opsTable returns the operator table of docs/inference.md as it must read:
// a row per registered operator with its opset versions, keeping the GPU
// and conformance columns of rows already there.
func opsTable(old map[string][]string) string {
	var b strings.Builder
	b.WriteString("| Operator | Opset versions | CPU | GPU | Conformance |\n|---|---|---|---|---|\n")
	for _, d := range onnx.Ops() {
		vs := make([]string, len(d.Versions))
		for i, v := range d.Versions {
			vs[i] = fmt.Sprint(v)
		}
		gpu, conf := "", ""
		if r, ok := old[d.Name]; ok && len(r) == 5 {
			gpu, conf = r[3], r[4]
		}
		fmt.Fprintf(&b, "| %s | %s | yes | %s | %s |\n", d.Name, strings.Join(vs, ", "), gpu, conf)
	}
	return b.String()
}

var tableRe = regexp.MustCompile(`(?s)<!-- ops: go test ./transforms/onnx -run TestOpsTable -update-ops-table -->\n(.*?)<!-- /ops -->`)

// docs/inference.md lists every registered operator with the opset
// versions it implements, and no other (go test ./transforms/onnx -run
// TestOpsTable -update-ops-table rewrites it).
func TestOpsTable(t *testing.T) {
	data, err := os.ReadFile(opsDoc)
	require.NoError(t, err)
	m := tableRe.FindSubmatchIndex(data)
	require.NotNil(t, m, "%s has no operator table between its markers", opsDoc)
	old := map[string][]string{}
	for _, line := range strings.Split(string(data[m[2]:m[3]]), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		old[cells[0]] = cells
	}
	want := opsTable(old)
	if *updateOpsTable {
		out := append(append(append([]byte{}, data[:m[2]]...), want...), data[m[3]:]...)
		require.NoError(t, os.WriteFile(opsDoc, out, 0o644))
		return
	}
	assert.Equal(t, want, string(data[m[2]:m[3]]), "the operator table of %s is not onnx.Ops()'s: go test ./transforms/onnx -run TestOpsTable -update-ops-table", opsDoc)
}
