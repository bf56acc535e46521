//go:build purego

package uninit

// Slice is make([]T, n) in the purego build: zeroed.
func Slice[T Number](n int) []T { return make([]T, n) }
