// Package lines reads text files of one record a line (JSONL, plain text;
// gzip where the name ends in .gz) in shards of rows: the launcher reads a
// file once to count its rows (its non-blank lines) and note where each
// shard starts (Scan), and a worker reads its shard's lines from there
// (Open and Skip: a seek locally; on an object store, and in a gzip file,
// by skipping), a line at a time and never one over a limit (ReadLine).
//
// This is how pipelines/infer reads a JSONL input, made reusable for
// pipelines/embed.
package lines

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// Info is a file as Scan found it: its rows (non-blank lines) and, per
// shard of rows, the byte offset (in the decompressed stream) and line
// number (from 1) of its first row.
type Info struct {
	Path    string
	Rows    int
	Offsets []int64
	Lines   []int
}

// Open opens a file, decompressed where its name ends in .gz.
func Open(ctx context.Context, path string) (io.Reader, func() error, error) {
	r, err := files.OpenRead(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasSuffix(strings.ToLower(path), ".gz") {
		return r, r.Close, nil
	}
	z, err := gzip.NewReader(r)
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("%s: not gzip: %w", path, err)
	}
	return z, func() error { z.Close(); return r.Close() }, nil
}

// Skip moves r to the byte offset off: a seek where r can, else by reading.
func Skip(r io.Reader, off int64) error {
	if sk, ok := r.(io.Seeker); ok {
		_, err := sk.Seek(off, io.SeekStart)
		return err
	}
	_, err := io.CopyN(io.Discard, r, off)
	return err
}

// Scan counts the rows of a file and notes where each shard of shardRows
// rows starts, reading the file once (lines are not held).
func Scan(ctx context.Context, path string, shardRows int) (*Info, error) {
	r, closeFn, err := Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	info := &Info{Path: path}
	br := bufio.NewReaderSize(r, 1<<20)
	var off int64
	line := 0
	for {
		line++
		start := off
		blank, n, err := skipLine(br)
		off += n
		if n > 0 && !blank {
			if info.Rows%shardRows == 0 {
				info.Offsets = append(info.Offsets, start)
				info.Lines = append(info.Lines, line)
			}
			info.Rows++
		}
		if err == io.EOF {
			return info, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
	}
}

// skipLine reads a line (its newline too) without keeping it: whether it
// is blank and its bytes; io.EOF at the end of the input.
func skipLine(br *bufio.Reader) (blank bool, n int64, err error) {
	blank = true
	for {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		if blank && len(bytes.TrimSpace(chunk)) > 0 {
			blank = false
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return blank, n, err
	}
}

// ReadLine reads a line of at most limit bytes (without its newline); a
// longer one is read past and returned as too long (line nil).
func ReadLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// Blank reports whether a line is blank (white space only): not a row.
func Blank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }
