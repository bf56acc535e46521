package main

import (
	"fmt"
	"strings"
)

// fmtSscan reads "KEY = NUMBER" lines of an MTL file.
func fmtSscan(line string, key *string, v *float64) (int, error) {
	k, val, ok := strings.Cut(line, "=")
	if !ok {
		return 0, nil
	}
	*key = strings.TrimSpace(k)
	n, err := fmt.Sscan(strings.TrimSpace(val), v)
	return n + 1, err
}
