package onnx_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// opCasesDir holds single-operator models of the forms ONNX's conformance
// data (ONNX 1.12) lacks, with ONNX Runtime's outputs
// (containers/onnx/export_op_cases.py).
const opCasesDir = "testdata/ops"

func opCases(t *testing.T) []testModel {
	f, err := os.Open(filepath.Join(opCasesDir, "cases.txt"))
	require.NoError(t, err)
	defer f.Close()
	var list []testModel
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		require.Len(t, fields, 4, "cases.txt: %q", s.Text())
		list = append(list, testModel{Name: fields[0], Model: filepath.Join(opCasesDir, fields[1]),
			Input: filepath.Join(opCasesDir, fields[2]), Output: filepath.Join(opCasesDir, fields[3])})
	}
	require.NoError(t, s.Err())
	require.NotEmpty(t, list)
	return list
}

// TestOpCases runs each single-operator case on the CPU and wholly on the
// emulated device, and holds both to ONNX Runtime's output (1e-4 relative).
func TestOpCases(t *testing.T) {
	dev := emulator(t)
	for _, c := range opCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			m, err := onnxtest.LoadFile(c.Model)
			require.NoError(t, err)
			in, want := onnxtest.ReadTensor(t, c.Input), onnxtest.ReadTensor(t, c.Output)
			got, err := m.Run([]nd.Array{in})
			require.NoError(t, err)
			assert.NoError(t, compareOutput(got[0], want, nil), "CPU")
			dgot, onHost, err := runOnDevice(dev, m, []nd.Array{in})
			require.NoError(t, err)
			assert.Empty(t, onHost, "nodes on the host")
			assert.NoError(t, compareOutput(dgot[0], want, nil), "device")
		})
	}
}
