package lines

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scan counts the non-blank lines and notes each shard's first row's
// offset and line; Open and Skip reach it again, in a plain file (a seek)
// and a gzip one (by reading), and ReadLine reads the rows back, a line
// over the limit read past as too long.
func TestScanAndRead(t *testing.T) {
	text := "a\n\n  \nbb\nccc\r\n" + strings.Repeat("x", 100) + "\nd\ne"
	dir := t.TempDir()
	plain := filepath.Join(dir, "t.txt")
	require.NoError(t, os.WriteFile(plain, []byte(text), 0o644))
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(text))
	require.NoError(t, zw.Close())
	gz := filepath.Join(dir, "t.txt.gz")
	require.NoError(t, os.WriteFile(gz, z.Bytes(), 0o644))
	for _, path := range []string{plain, gz} {
		info, err := Scan(context.Background(), path, 2)
		require.NoError(t, err)
		assert.Equal(t, 6, info.Rows, path)
		assert.Equal(t, []int{1, 5, 7}, info.Lines, path)
		assert.Equal(t, []int64{0, 9, 115}, info.Offsets, path)
		r, closeFn, err := Open(context.Background(), path)
		require.NoError(t, err)
		require.NoError(t, Skip(r, info.Offsets[1]))
		br := bufio.NewReader(r)
		line, long, err := ReadLine(br, 50)
		require.NoError(t, err)
		assert.Equal(t, "ccc", string(line), "CR LF cut")
		assert.False(t, long)
		line, long, err = ReadLine(br, 50)
		require.NoError(t, err)
		assert.True(t, long)
		assert.Nil(t, line)
		line, _, err = ReadLine(br, 50)
		require.NoError(t, err)
		assert.Equal(t, "d", string(line))
		line, _, err = ReadLine(br, 50)
		assert.Equal(t, io.EOF, err)
		assert.Equal(t, "e", string(line))
		require.NoError(t, closeFn())
	}
	assert.True(t, Blank([]byte(" \t")))
	_, err := Scan(context.Background(), filepath.Join(dir, "none.txt"), 2)
	assert.Error(t, err)
}
