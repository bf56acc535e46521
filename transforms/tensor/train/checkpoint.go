package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// Checkpoint files are named ckpt-<step, 10 digits>.bgckpt, so that their
// names sort in step order. Their format (little-endian):
//
//	"BGCKP"                    5 bytes, magic
//	version                    uint32 (checkpointVersion)
//	seed                       uint64
//	batch size                 uint32
//	learning rate              float64
//	schedule                   uint32 (0 constant, 1 cosine)
//	training rows              uint64
//	epoch, position in epoch   uint32, uint32
//	step                       uint64
//	epoch loss sum, count      float64, uint64
//	model length, model        uint64, a tensor MLP file (with its own checksum)
//	Adam moments               float32: for each parameter tensor (W then B of
//	                           each layer), m then v
//	SHA-256                    32 bytes, of everything before it
const (
	checkpointMagic   = "BGCKP"
	checkpointVersion = 1
	checkpointPrefix  = "ckpt-"
	checkpointSuffix  = ".bgckpt"
)

// ErrCheckpoint marks a checkpoint that cannot be used (corrupt, truncated,
// or from another format version).
var ErrCheckpoint = errors.New("bad checkpoint")

func checkpointName(step int) string {
	return fmt.Sprintf("%s%010d%s", checkpointPrefix, step, checkpointSuffix)
}

// checkpoints lists the checkpoint files of dir, newest (highest step) first.
func checkpoints(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasPrefix(n, checkpointPrefix) && strings.HasSuffix(n, checkpointSuffix) {
			if _, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(n, checkpointPrefix), checkpointSuffix)); err == nil {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	slices.Reverse(names)
	return names, nil
}

func scheduleCode(s string) uint32 {
	if s == Cosine {
		return 1
	}
	return 0
}

// encodeCheckpoint serialises the state and the configuration it depends on.
func encodeCheckpoint(cfg Config, rows int, st *state) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(checkpointMagic)
	le := binary.LittleEndian
	put32 := func(v uint32) { b.Write(le.AppendUint32(nil, v)) }
	put64 := func(v uint64) { b.Write(le.AppendUint64(nil, v)) }
	put32(checkpointVersion)
	put64(cfg.Seed)
	put32(uint32(cfg.BatchSize))
	put64(math.Float64bits(cfg.LR))
	put32(scheduleCode(cfg.Schedule))
	put64(uint64(rows))
	put32(uint32(st.epoch))
	put32(uint32(st.pos))
	put64(uint64(st.step))
	put64(math.Float64bits(st.lossSum))
	put64(uint64(st.lossN))
	var mb bytes.Buffer
	if _, err := st.model.WriteTo(&mb); err != nil {
		return nil, err
	}
	put64(uint64(mb.Len()))
	b.Write(mb.Bytes())
	buf := make([]byte, 0, 4096)
	for i := range st.m {
		for _, f := range [][]float32{st.m[i], st.v[i]} {
			for len(f) > 0 {
				n := min(len(f), 1024)
				buf = buf[:0]
				for _, v := range f[:n] {
					buf = le.AppendUint32(buf, math.Float32bits(v))
				}
				b.Write(buf)
				f = f[n:]
			}
		}
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes(), nil
}

// writeCheckpoint writes the state atomically to CheckpointDir and removes
// older checkpoints beyond cfg.Keep.
func writeCheckpoint(cfg Config, rows int, st *state) (string, error) {
	if err := os.MkdirAll(cfg.CheckpointDir, 0o755); err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	data, err := encodeCheckpoint(cfg, rows, st)
	if err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	path := filepath.Join(cfg.CheckpointDir, checkpointName(st.step))
	if err := tensor.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}); err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	// Keep the new checkpoint and the Keep-1 newest older ones. Newer names
	// (from a run that fell back past them) are left alone.
	names, err := checkpoints(cfg.CheckpointDir)
	if err != nil {
		return path, nil
	}
	kept := 0
	for _, n := range names {
		if n > checkpointName(st.step) {
			continue
		}
		kept++
		if kept > cfg.Keep {
			os.Remove(filepath.Join(cfg.CheckpointDir, n))
		}
	}
	return path, nil
}

// reader decodes little-endian values, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) next(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w: truncated (wanted %d more bytes, %d left)", ErrCheckpoint, n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u32() uint32 {
	if b := r.next(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.next(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// readCheckpoint reads and verifies a checkpoint file, and checks that it
// belongs to a run of cfg on rows training rows. A damaged file gives an
// ErrCheckpoint error; a valid checkpoint of another configuration gives
// another error.
func readCheckpoint(path string, cfg Config, rows int) (*state, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) < len(checkpointMagic)+4+sha256.Size {
		return nil, fmt.Errorf("%s: %w: truncated (%d bytes)", path, ErrCheckpoint, len(data))
	}
	if string(data[:len(checkpointMagic)]) != checkpointMagic {
		return nil, fmt.Errorf("%s: %w: wrong magic %q", path, ErrCheckpoint, data[:len(checkpointMagic)])
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%s: %w: checksum mismatch (corrupt or truncated file)", path, ErrCheckpoint)
	}
	r := &reader{b: body[len(checkpointMagic):]}
	if v := r.u32(); v != checkpointVersion {
		return nil, fmt.Errorf("%s: %w: format version %d, this build reads %d", path, ErrCheckpoint, v, checkpointVersion)
	}
	seed, bs, lr, sched, n := r.u64(), int(r.u32()), math.Float64frombits(r.u64()), r.u32(), int(r.u64())
	st := &state{epoch: int(r.u32()), pos: int(r.u32()), step: int(r.u64()), lossSum: math.Float64frombits(r.u64()), lossN: int(r.u64())}
	mlen := r.u64()
	if r.err == nil && mlen > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: model of %d bytes, %d left", ErrCheckpoint, mlen, len(r.b))
	}
	mb := r.next(int(mlen))
	if r.err != nil {
		return nil, fmt.Errorf("%s: %w", path, r.err)
	}
	if st.model, err = tensor.ReadMLP(bytes.NewReader(mb), path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if seed != cfg.Seed || bs != cfg.BatchSize || lr != cfg.LR || sched != scheduleCode(cfg.Schedule) || n != rows {
		return nil, fmt.Errorf("%s was written by a run with seed %d, batch size %d, learning rate %v, schedule %d, %d training rows; this run has seed %d, batch size %d, learning rate %v, schedule %d, %d rows: use another checkpoint directory or remove it",
			path, seed, bs, lr, sched, n, cfg.Seed, cfg.BatchSize, cfg.LR, scheduleCode(cfg.Schedule), rows)
	}
	if err := st.model.CheckShape(cfg.Dims...); err != nil {
		return nil, fmt.Errorf("%s belongs to another model: %w: use another checkpoint directory or remove it", path, err)
	}
	for _, p := range st.params() {
		for range 2 {
			b := r.next(4 * len(p))
			if r.err != nil {
				return nil, fmt.Errorf("%s: %w", path, r.err)
			}
			f := make([]float32, len(p))
			for i := range f {
				f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
			if len(st.m) == len(st.v) {
				st.m = append(st.m, f)
			} else {
				st.v = append(st.v, f)
			}
		}
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%s: %w: %d unexpected bytes at the end", path, ErrCheckpoint, len(r.b))
	}
	stepsPerEpoch := (rows + bs - 1) / bs
	if st.pos >= stepsPerEpoch || st.step != st.epoch*stepsPerEpoch+st.pos {
		return nil, fmt.Errorf("%s: %w: epoch %d position %d step %d are inconsistent", path, ErrCheckpoint, st.epoch, st.pos, st.step)
	}
	return st, nil
}

// resume loads the newest valid checkpoint of cfg.CheckpointDir; damaged
// ones are reported on cfg.Progress and skipped. It returns nil when there is
// none.
func resume(cfg Config, rows int) (*state, string, error) {
	names, err := checkpoints(cfg.CheckpointDir)
	if err != nil {
		return nil, "", fmt.Errorf("train: %w", err)
	}
	for _, n := range names {
		path := filepath.Join(cfg.CheckpointDir, n)
		st, err := readCheckpoint(path, cfg, rows)
		if errors.Is(err, ErrCheckpoint) {
			fmt.Fprintf(cfg.Progress, "skipping unusable checkpoint: %v\n", err)
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("train: %w", err)
		}
		return st, path, nil
	}
	if len(names) > 0 {
		fmt.Fprintf(cfg.Progress, "no usable checkpoint in %s: starting from scratch\n", cfg.CheckpointDir)
	}
	return nil, "", nil
}
