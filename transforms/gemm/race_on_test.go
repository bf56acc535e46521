//go:build race

package gemm

// raceDetector says the tests run under the race detector, which makes
// sync.Pool drop what it holds at random (to find its misuse): the tests
// that count a product's allocations skip there.
const raceDetector = true
