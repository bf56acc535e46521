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
// a row per registered operator with its opset versions, whether it has a
// GPU launch and how many of its conformance tests ran wholly on the
// (emulated) device, and its conformance on the CPU.
func opsTable(cpu *Scoreboard, dev *deviceBoard) string {
	var b strings.Builder
	b.WriteString("| Operator | Opset versions | CPU | GPU (conformance tests wholly on the device) | Conformance (passed / run, skipped) |\n|---|---|---|---|---|\n")
	for _, d := range onnx.Ops() {
		vs := make([]string, len(d.Versions))
		for i, v := range d.Versions {
			vs[i] = fmt.Sprint(v)
		}
		on, all := dev.Device[d.Name], dev.Device[d.Name]+dev.Host[d.Name]
		gpu := fmt.Sprintf("yes (%d / %d)", on, all)
		if on == 0 {
			gpu = fmt.Sprintf("no (0 / %d)", all)
		}
		conf := fmt.Sprintf("%d / %d", cpu.Passed[d.Name], cpu.Run[d.Name])
		if n := cpu.Skipped[d.Name]; n > 0 {
			conf += fmt.Sprintf(", %d skipped", n)
		}
		fmt.Fprintf(&b, "| %s | %s | yes | %s | %s |\n", d.Name, strings.Join(vs, ", "), gpu, conf)
	}
	return b.String()
}

var tableRe = regexp.MustCompile(`(?s)<!-- ops: go test ./transforms/onnx -run TestOpsTable -update-ops-table -->\n(.*?)<!-- /ops -->`)

// docs/inference.md lists every registered operator with the opset
// versions it implements, its GPU launch and its conformance counts, and
// no other (go test ./transforms/onnx -run
// TestOpsTable -update-ops-table rewrites it).
func TestOpsTable(t *testing.T) {
	data, err := os.ReadFile(opsDoc)
	require.NoError(t, err)
	m := tableRe.FindSubmatchIndex(data)
	require.NotNil(t, m, "%s has no operator table between its markers", opsDoc)
	cpu, _, _, _ := cpuConformance(t)
	want := opsTable(cpu, deviceConformance(t))
	if *updateOpsTable {
		out := append(append(append([]byte{}, data[:m[2]]...), want...), data[m[3]:]...)
		require.NoError(t, os.WriteFile(opsDoc, out, 0o644))
		return
	}
	assert.Equal(t, want, string(data[m[2]:m[3]]), "the operator table of %s is not onnx.Ops()'s: go test ./transforms/onnx -run TestOpsTable -update-ops-table", opsDoc)
}
