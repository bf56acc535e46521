package backend

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A report written after the run lists what ran on each GPU device, in its
// text and in its JSON; one written before has no devices.
func TestReportListsDevices(t *testing.T) {
	r := Report{Default: GPU, Decisions: []Decision{{Step: "toa_ndvi", GPUOp: "raster.toa_ndvi", Impl: GPU, Requested: GPU, Reason: "gpu: GPU executor x: 2 devices: [0] a; [1] b"}}}
	var before bytes.Buffer
	require.NoError(t, r.WriteJSON(&before))
	assert.NotContains(t, before.String(), `"devices"`)

	r.Devices = []DeviceCounts{{Device: 0, Batches: 6, Bytes: 3e6, BusyNS: 2e9}, {Device: 1, Batches: 5, Bytes: 2e6, BusyNS: 1e9}}
	var txt, js bytes.Buffer
	require.NoError(t, r.WriteText(&txt))
	assert.Contains(t, txt.String(), "GPU DEVICE")
	assert.Contains(t, txt.String(), "GPU DEVICE  BATCHES    MB  BUSY S\n")
	assert.Contains(t, txt.String(), " 0        6  3.00   2.000\n")
	require.NoError(t, r.WriteJSON(&js))
	var back Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, r.Devices, back.Devices)
}
