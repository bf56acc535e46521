//go:build !cuda || beamgpu_oplist

package serve

// deviceCeilings has nothing to measure without a GPU.
func deviceCeilings(*ceilings, int) error { return nil }
