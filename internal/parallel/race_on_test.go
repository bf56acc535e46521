//go:build race

package parallel_test

// raceDetector says the tests run under the race detector, which makes
// sync.Pool drop what it holds at random (to find its misuse): the test
// that counts ForWith's and EachWith's allocations (their arguments' boxes
// are pooled) skips there.
const raceDetector = true
