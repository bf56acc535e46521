// Package rowparts writes the per-row records of a pipeline's output file
// as part files, a shard of rows at a time, and reads them back: the way a
// pipeline's workers write rows that a single report then joins in row
// order, so that no step holds more than a shard's rows.
//
// A Writer gathers the records of an output file's rows by shard (rows
// [s*ShardRows, (s+1)*ShardRows)) and writes each shard's as a part file
// as soon as the shard is complete, the incomplete ones (rows that failed,
// or rows another worker has) when the bundle ends (Finish). A part's name
// carries the run ID (.<file>.<first>.<run>.<shard>.part), so that the
// temporaries of a killed run are recognised (jobfiles.RemoveStale). Read
// reads a part's records back; a shard may have several parts.
//
// This is the writer of pipelines/infer (predictions.npy's parts), made
// reusable for pipelines/embed.
package rowparts

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// Part is a part file a Writer wrote: rows of one shard of an output file.
type Part struct {
	File  string
	Shard int
	Path  string
	Rows  int
}

func init() { beam.RegisterType(reflect.TypeOf(Part{})) }

// Writer writes the records of the rows of File (an output file's name)
// to part files in Output. N is the number of rows of the input and
// ShardRows the rows of a shard.
type Writer struct {
	File      string
	Output    string
	RunID     string
	ShardRows int
	N         int

	open map[int]map[int][]byte
}

func (w *Writer) size(s int) int { return min(w.N, (s+1)*w.ShardRows) - s*w.ShardRows }

// Add adds row index's record; a part is written (and emitted) when its
// shard is complete.
func (w *Writer) Add(ctx context.Context, ts beam.EventTime, index int64, rec []byte, emit func(beam.EventTime, Part)) error {
	if w.open == nil {
		w.open = map[int]map[int][]byte{}
	}
	s := int(index) / w.ShardRows
	rows := w.open[s]
	if rows == nil {
		rows = map[int][]byte{}
		w.open[s] = rows
	}
	rows[int(index)%w.ShardRows] = rec
	if len(rows) == w.size(s) {
		return w.flush(ctx, ts, s, emit)
	}
	return nil
}

func (w *Writer) flush(ctx context.Context, ts beam.EventTime, s int, emit func(beam.EventTime, Part)) error {
	rows := w.open[s]
	delete(w.open, s)
	idx := make([]int, 0, len(rows))
	for i := range rows {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	path := jobfiles.Join(w.Output, fmt.Sprintf(".%s.%d.%s.%08d.part", w.File, idx[0], w.RunID, s))
	err := jobfiles.WriteFile(ctx, w.RunID, path, func(out io.Writer) error {
		bw := bufio.NewWriter(out)
		var hdr [2 * binary.MaxVarintLen64]byte
		for _, i := range idx {
			n := binary.PutUvarint(hdr[:], uint64(i))
			n += binary.PutUvarint(hdr[n:], uint64(len(rows[i])))
			bw.Write(hdr[:n])
			bw.Write(rows[i])
		}
		return bw.Flush()
	})
	if err != nil {
		return err
	}
	emit(ts, Part{File: w.File, Shard: s, Path: path, Rows: len(idx)})
	return nil
}

// Finish writes the parts of the incomplete shards (at the end of a
// bundle).
func (w *Writer) Finish(ctx context.Context, emit func(beam.EventTime, Part)) error {
	open := make([]int, 0, len(w.open))
	for s := range w.open {
		open = append(open, s)
	}
	sort.Ints(open)
	for _, s := range open {
		if err := w.flush(ctx, beam.EventTime(0), s, emit); err != nil {
			return err
		}
	}
	return nil
}

// Read reads a part file's records: rec gets each row's position in its
// shard and its record, in row order.
func Read(ctx context.Context, path string, rec func(i int, data []byte) error) error {
	r, err := files.OpenRead(ctx, path)
	if err != nil {
		return err
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		i, err := binary.ReadUvarint(br)
		if err == io.EOF {
			return nil
		}
		var n uint64
		if err == nil {
			n, err = binary.ReadUvarint(br)
		}
		if err == nil && n > 1<<32 {
			err = fmt.Errorf("record of %d bytes", n)
		}
		data := make([]byte, n)
		if err == nil {
			_, err = io.ReadFull(br, data)
		}
		if err != nil {
			return fmt.Errorf("%s: a corrupt part file: %w", path, err)
		}
		if err := rec(int(i), data); err != nil {
			return err
		}
	}
}

// ByShard groups parts by shard, the shards in order.
func ByShard(parts []Part) [][]Part {
	m := map[int][]Part{}
	for _, p := range parts {
		m[p.Shard] = append(m[p.Shard], p)
	}
	idx := make([]int, 0, len(m))
	for s := range m {
		idx = append(idx, s)
	}
	sort.Ints(idx)
	out := make([][]Part, len(idx))
	for k, s := range idx {
		out[k] = m[s]
	}
	return out
}
