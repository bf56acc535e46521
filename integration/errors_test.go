package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every error a package of the executor makes starts with the package's one
// prefix (or wraps an error that does, "%w..."), so that a message says
// where it comes from: the shared failures (out of memory, fatal) are
// protocol's, defined once.
func TestOneErrorPrefixPerPackage(t *testing.T) {
	prefixes := map[string]string{
		"../runtime/executor/client":   "GPU executor: ",
		"../runtime/executor/cuda":     "cuda: ",
		"../runtime/executor/gpu":      "gpu: ",
		"../runtime/executor/protocol": "executor: ",
		"../runtime/executor/server":   "executor: ",
		"../runtime/executor/shm":      "shm: ",
	}
	made := regexp.MustCompile(`(?:errors\.New|fmt\.Errorf)\(\s*"((?:[^"\\]|\\.)*)"`)
	for dir, prefix := range prefixes {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, m := range made.FindAllStringSubmatch(string(src), -1) {
				msg := m[1]
				assert.True(t, strings.HasPrefix(msg, prefix) || strings.HasPrefix(msg, "%w"),
					"%s: error %q does not start with %q", f, msg, prefix)
			}
		}
	}
	for _, dir := range []string{"../runtime/executor/client", "../runtime/executor/cuda", "../runtime/executor/server"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			src, _ := os.ReadFile(f)
			assert.NotRegexp(t, `(?m)^\s*(var )?Err(Fatal|OutOfMemory)\s*=`, string(src), "%s: the shared errors are protocol's", f)
		}
	}
}
