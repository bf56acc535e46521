//go:build race

package onnx_test

// raceDetector says the tests run under the race detector, which makes
// sync.Pool drop what it holds at random (to find its misuse): the tests
// that count a run's allocations skip there.
const raceDetector = true
