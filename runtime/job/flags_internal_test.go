package job

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A pipeline's own flag given twice is an error (the flag package keeps
// the last value silently: --input=a --input=b ran on b alone).
func TestRepeatedOwnFlagsAreRefused(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("input", "", "")
	fs.String("output", "", "")
	fs.Bool("strict", false, "")
	fs.String("experiments", "", "")
	own := []string{"input", "output", "strict"}
	err := repeatedFlags([]string{"--input=a", "--strict", "-input", "b"}, fs, own)
	require.Error(t, err)
	assert.Equal(t, `--input given twice ("a" and "b"): give it once`, err.Error())
	assert.NoError(t, repeatedFlags([]string{"--input=a", "--output", "o", "--experiments=x", "--experiments=y"}, fs, own))
	assert.NoError(t, repeatedFlags([]string{"--input=a", "--", "--input=b"}, fs, own), "after --: arguments")
	assert.Error(t, repeatedFlags([]string{"--strict", "--strict=false"}, fs, own))
}
