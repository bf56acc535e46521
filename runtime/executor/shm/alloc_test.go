package shm_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/shm"
	"github.com/stretchr/testify/assert"
)

func TestAllocator(t *testing.T) {
	a := shm.NewAllocator(1024, 200)
	r1, ok := a.Alloc(10)
	assert.True(t, ok)
	assert.Equal(t, shm.Region{Off: 1024, Len: 10}, r1)
	r2, ok := a.Alloc(0)
	assert.True(t, ok)
	assert.Equal(t, int64(1024+64), r2.Off, "regions are 64-byte aligned")
	assert.Equal(t, int64(64+64+50), a.Need(50, 50))
	r3, ok := a.Alloc(72)
	assert.True(t, ok)
	assert.Equal(t, int64(1024+64), r3.Off)
	assert.Equal(t, int64(64+72), a.Used())
	_, ok = a.Alloc(65)
	assert.False(t, ok, "past the end")
	_, ok = a.Alloc(-1)
	assert.False(t, ok)
	r4, ok := a.Alloc(8)
	assert.True(t, ok, "exactly to the end")
	assert.Equal(t, int64(1024+200), r4.End())
	a.Reset()
	r5, _ := a.Alloc(1)
	assert.Equal(t, int64(1024), r5.Off)
	assert.Equal(t, int64(128), shm.AlignUp(65))
	assert.Equal(t, int64(0), shm.AlignUp(0))
}
