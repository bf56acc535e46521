//go:build cuda

package cuda

// SetBudget sets the device memory this Device may hold (at most the GPU's
// total); allocations above it fail with protocol.ErrOutOfMemory.
func (d *Device) SetBudget(bytes int64) {
	d.mem.Lock()
	defer d.mem.Unlock()
	d.mem.budget = min(bytes, d.info.TotalBytes)
	d.info.BudgetBytes = d.mem.budget
}

// ShareBudget is the budget of one of processes processes sharing a GPU of
// total bytes (several SDK harness processes on a worker, or MPS clients),
// each allowed fraction of the GPU divided among them.
func ShareBudget(total int64, fraction float64, processes int) int64 {
	if processes < 1 {
		processes = 1
	}
	return int64(float64(total) * fraction / float64(processes))
}
