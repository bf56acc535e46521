package rowparts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Writer writes a shard's part as soon as its rows are all there, the
// incomplete shards at Finish; Read gives the records back in row order,
// ByShard groups the parts by shard in order.
func TestWriterAndRead(t *testing.T) {
	dir := t.TempDir()
	w := Writer{File: "x.npy", Output: dir, RunID: "0123456789ab", ShardRows: 3, N: 7}
	var parts []Part
	emit := func(_ beam.EventTime, p Part) { parts = append(parts, p) }
	ctx := context.Background()
	for _, i := range []int64{4, 0, 2, 6, 1} {
		require.NoError(t, w.Add(ctx, 0, i, []byte{byte('a' + i)}, emit))
	}
	require.Len(t, parts, 2, "shard 0 (rows 0-2) and shard 2 (row 6) are complete")
	assert.Equal(t, []int{2, 0}, []int{parts[0].Shard, parts[1].Shard}, "in the order they complete")
	require.NoError(t, w.Finish(ctx, emit))
	require.Len(t, parts, 3, "shard 1 is written at Finish with its one row")
	assert.Equal(t, 1, parts[2].Rows)
	got := map[int]string{}
	for _, ps := range ByShard(parts) {
		for _, p := range ps {
			assert.Equal(t, dir, filepath.Dir(p.Path))
			require.NoError(t, Read(ctx, p.Path, func(i int, b []byte) error {
				got[p.Shard*3+i] = string(b)
				return nil
			}))
		}
	}
	assert.Equal(t, map[int]string{0: "a", 1: "b", 2: "c", 4: "e", 6: "g"}, got)
	require.NoError(t, os.WriteFile(parts[0].Path, []byte{0, 200}, 0o644))
	assert.ErrorContains(t, Read(ctx, parts[0].Path, func(int, []byte) error { return nil }), "a corrupt part file")
}
