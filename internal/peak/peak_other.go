//go:build !amd64 || purego

package peak

// fmaLoop is the portable loop: 8 multiply-adds of 2 operations each (the
// compiler may or may not fuse them).
func fmaLoop() (string, float64, func(int)) { return "go", 8 * 2, goLoop }
