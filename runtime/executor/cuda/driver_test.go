package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckDriver(t *testing.T) {
	assert.NoError(t, CheckDriver(12000, "525.60.13"))
	assert.NoError(t, CheckDriver(13000, "580.159.03"), "the H100 machines' driver")
	assert.NoError(t, CheckDriver(12040, ""))

	err := CheckDriver(11040, "470.223.02")
	require.Error(t, err)
	assert.Equal(t, "cuda: the NVIDIA driver 470.223.02 (CUDA 11.4) is too old: this executor needs a driver for CUDA 12.0 or newer, R525 or newer (the worker image is CUDA 12); on Dataflow ask for it with install-nvidia-driver:5xx (or :latest) in worker_accelerator or the accelerator hint", err.Error())
	assert.ErrorContains(t, CheckDriver(11080, ""), "cuda: the NVIDIA driver (CUDA 11.8) is too old")
	assert.ErrorContains(t, CheckDriver(0, ""), "cuda: the NVIDIA driver is too old")
}

func TestParseDriverVersion(t *testing.T) {
	for text, want := range map[string]string{
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc version 12.2.0\n":        "535.104.05",
		"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.03  Release Build  (dvs-builder@U16-I2-C03-12-4)  Mon Nov 3 2025\n": "580.159.03",
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.223.02  Sat Oct  7 15:39:11 UTC 2023":                                            "470.223.02",
		"":               "",
		"something else": "",
	} {
		assert.Equal(t, want, ParseDriverVersion(text), text)
	}
	assert.Equal(t, 535, DriverBranch("535.104.05"))
	assert.Equal(t, 0, DriverBranch(""))
}
