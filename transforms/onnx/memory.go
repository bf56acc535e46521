package onnx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The memory a model takes is decided by its worker, not by the model: a
// model whose shapes ask for 2^36 elements (a Pad with a huge pad, a
// ConstantOfShape, an Expand) is refused with an error naming the node and
// the bytes, before anything is allocated, and the process goes on. Every
// buffer the runtime allocates for values (a run's workspace, its outputs
// and their copies, the values folded at load and while planning, the
// host copies of a device run, a model file and its external data) goes
// through one function, memory.alloc, which checks it against the call's
// memory budget first. Operators' scratch buffers (a row, a tile, a
// channel's statistics) are not counted: they are bounded by the node's
// inputs and outputs, which are.

// EnvMemoryBudget is the environment variable that sets the default memory
// budget: an amount of memory as ParseBytes reads it (4GiB, 512MiB,
// 8000000000).
const EnvMemoryBudget = "BEAMGPU_ONNX_MEMORY_BUDGET"

// ErrMemoryBudget is wrapped by the error of a run, a plan or a load that
// would allocate more than its memory budget (a *MemoryError).
var ErrMemoryBudget = errors.New("over the memory budget")

// RunOptions are the options of a run (Model.RunWith, Plan.RunWith).
type RunOptions struct {
	// MemoryBudget bounds the bytes the run allocates (its workspace where
	// it is not reused, its outputs, the values computed while planning):
	// an allocation that would take the run past it fails, naming the node
	// and the bytes, before it is made. 0 is the default (DefaultMemoryBudget).
	MemoryBudget int64
	// Context, if not nil, bounds the run in time: once it is done
	// (cancelled, or past its deadline) the run stops before its next step
	// and between a Loop's iterations, failing with an error that names the
	// node and wraps the context's (errors.Is context.DeadlineExceeded). A
	// model's Loop runs at most 2^24 iterations whatever the context.
	Context context.Context
}

// MemoryError is the error of an allocation over its budget.
type MemoryError struct {
	// Node names the node that asks (`node "pad" (Pad, opset 18)`); empty
	// where no node does (a model file).
	Node string
	// What is what the bytes are for: `output "y" float32[4x65536x65536]`,
	// "the run's workspace (...)".
	What string
	// Bytes is what was asked; Held what the call held already.
	Bytes, Held int64
	// Budget is the call's budget, and Source where it came from.
	Budget int64
	Source string
}

func (e *MemoryError) Error() string {
	var b strings.Builder
	if e.Node != "" {
		b.WriteString(e.Node + ": ")
	}
	fmt.Fprintf(&b, "%s: %d bytes (%s)", e.What, e.Bytes, humanBytes(e.Bytes))
	if e.Held > 0 {
		fmt.Fprintf(&b, " on top of %d held", e.Held)
	}
	fmt.Fprintf(&b, ", over the memory budget of %d bytes (%s; %s)", e.Budget, humanBytes(e.Budget), e.Source)
	return b.String()
}

// Unwrap makes errors.Is(err, ErrMemoryBudget) true.
func (e *MemoryError) Unwrap() error { return ErrMemoryBudget }

// humanBytes writes n in binary units, e.g. "64.0 GiB".
func humanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f, u := float64(n), 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[u])
}

// memory is what one call (a run, a plan, a load) may allocate: its budget
// and what it holds. It is not safe for concurrent use; each call has its
// own.
type memory struct {
	budget int64
	source string
	held   int64
	// unread is set where the budget is the default, not yet read: it is
	// read when the call first allocates (lazyMemory).
	unread bool
	// ctx is the run's context (RunOptions.Context), nil for none.
	ctx context.Context
}

// stopped returns the error of a run whose context is done, else nil.
func (m *memory) stopped() error {
	if m.ctx == nil {
		return nil
	}
	if err := m.ctx.Err(); err != nil {
		return fmt.Errorf("the run was stopped: %w", err)
	}
	return nil
}

// lazyMemory is the memory of a call with the default budget, read when
// the call first allocates, so that a call that allocates nothing (a run
// into the caller's outputs) reads neither the environment nor /proc.
func lazyMemory() memory { return memory{unread: true} }

// newMemory returns the memory of a call with budget bytes (0: the
// default).
func newMemory(budget int64) (*memory, error) {
	if budget > 0 {
		return &memory{budget: budget, source: "the budget given"}, nil
	}
	if budget < 0 {
		return nil, fmt.Errorf("memory budget %d: want a positive number of bytes, or 0 for the default", budget)
	}
	b, src, err := DefaultMemoryBudget()
	if err != nil {
		return nil, err
	}
	return &memory{budget: b, source: src}, nil
}

// fits reports whether n more bytes fit the budget.
func (m *memory) fits(n int64) bool { return n >= 0 && n <= m.budget-m.held }

// alloc returns n zeroed bytes, aligned for every element type (nd.Bytes),
// if they fit the budget; else a *MemoryError naming node (nil: none) and
// what. It is the one place the runtime allocates the memory of values.
func (m *memory) alloc(n int64, node *node, what func() string) ([]byte, error) {
	if m.unread {
		b, src, err := DefaultMemoryBudget()
		if err != nil {
			return nil, err
		}
		m.budget, m.source, m.unread = b, src, false
	}
	if !m.fits(n) || n > math.MaxInt {
		e := &MemoryError{What: what(), Bytes: n, Held: m.held, Budget: m.budget, Source: m.source}
		if node != nil {
			e.Node = node.label()
		}
		return nil, e
	}
	m.held += n
	return nd.Bytes(int(n)), nil
}

// array returns an array of zeros of t and shape from alloc.
func (m *memory) array(t nd.DType, shape []int, node *node, what func() string) (nd.Array, error) {
	n, err := nd.Numel(shape)
	if err != nil {
		return nd.Array{}, err
	}
	data, err := m.alloc(int64(n)*int64(t.Size()), node, func() string { return what() + " " + t.String() + nd.ShapeString(shape) })
	if err != nil {
		return nd.Array{}, err
	}
	return nd.Array{Type: t, Shape: append([]int{}, shape...), Data: data}, nil
}

// clone is a.Clone from alloc.
func (m *memory) clone(a nd.Array, node *node, what func() string) (nd.Array, error) {
	c, err := m.array(a.Type, a.Shape, node, what)
	if err == nil {
		copy(c.Data, a.Data)
	}
	return c, err
}

// convert is nd.Convert from alloc.
func (m *memory) convert(a nd.Array, t nd.DType, node *node, what func() string) (nd.Array, error) {
	c, err := m.array(t, a.Shape, node, what)
	if err == nil {
		nd.ConvertInto(c, a)
	}
	return c, err
}

// DefaultMemoryBudget is the memory budget of a call that gives none:
// $BEAMGPU_ONNX_MEMORY_BUDGET where it is set, else the memory available
// to the process when the call starts: the least of MemAvailable in
// /proc/meminfo and, for each memory cgroup of the process (v2
// memory.max, v1 memory.limit_in_bytes) that has a limit, the limit less
// the usage (less the inactive file cache, which the kernel reclaims).
// Where none of these can be read (not Linux), it is 8 GiB. source says
// which it is, for errors.
func DefaultMemoryBudget() (budget int64, source string, err error) {
	if s := os.Getenv(EnvMemoryBudget); s != "" {
		n, err := ParseBytes(s)
		if err != nil {
			return 0, "", fmt.Errorf("$%s: %w", EnvMemoryBudget, err)
		}
		if n <= 0 {
			return 0, "", fmt.Errorf("$%s=%s: want a positive amount of memory", EnvMemoryBudget, s)
		}
		return n, EnvMemoryBudget + "=" + s, nil
	}
	a := available()
	return a.bytes, a.source, nil
}

// fallbackBudget is the default budget where the memory available cannot
// be read.
const fallbackBudget = 8 << 30

type availableMemory struct {
	at     time.Time
	bytes  int64
	source string
}

// availableCache keeps the last reading of the memory available for
// availableFor (a reading is a few small file reads; a run of a small
// model takes microseconds).
var availableCache struct {
	sync.Mutex
	last availableMemory
}

const availableFor = 100 * time.Millisecond

func available() availableMemory {
	availableCache.Lock()
	defer availableCache.Unlock()
	if now := time.Now(); now.Sub(availableCache.last.at) > availableFor || now.Before(availableCache.last.at) {
		availableCache.last = readAvailable()
		availableCache.last.at = now
	}
	return availableCache.last
}

// readAvailable reads the memory available to the process now.
func readAvailable() availableMemory {
	a := availableMemory{bytes: -1}
	if kb, ok := meminfo("/proc/meminfo", "MemAvailable"); ok {
		a = availableMemory{bytes: kb * 1024, source: "the memory available: MemAvailable in /proc/meminfo"}
	}
	for _, c := range cgroupDirs("/proc/self/cgroup", "/sys/fs/cgroup") {
		if free, ok := cgroupFree(c); ok && (a.bytes < 0 || free < a.bytes) {
			a = availableMemory{bytes: max(free, 0), source: "the memory available: the limit of cgroup " + c.dir + " less its usage"}
		}
	}
	if a.bytes < 0 {
		a = availableMemory{bytes: fallbackBudget, source: "a fixed 8 GiB: the memory available cannot be read here"}
	}
	return a
}

// meminfo reads a field of /proc/meminfo, in kB.
func meminfo(file, field string) (int64, bool) {
	f, err := os.Open(file)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		name, rest, ok := strings.Cut(s.Text(), ":")
		if ok && name == field {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v, err == nil && v >= 0
		}
	}
	return 0, false
}

// cgroup is a memory cgroup's directory and its files' names.
type cgroup struct {
	dir                 string
	limit, usage, inact string // files; inact: the key of memory.stat
	stat                string
	unlimitedAtOrAbove  int64
	unlimitedWord       string
}

// cgroupDirs are the memory cgroups that file (/proc/self/cgroup) lists and
// their ancestors, at the usual mount points under sys (/sys/fs/cgroup for
// v2, /sys/fs/cgroup/memory for v1), those that exist.
func cgroupDirs(file, sys string) []cgroup {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []cgroup
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var c cgroup
		root := ""
		switch {
		case parts[0] == "0" && parts[1] == "":
			root = sys
			c = cgroup{limit: "memory.max", usage: "memory.current", stat: "memory.stat", inact: "inactive_file", unlimitedWord: "max"}
		case strings.Contains(","+parts[1]+",", ",memory,"):
			root = path.Join(sys, "memory")
			c = cgroup{limit: "memory.limit_in_bytes", usage: "memory.usage_in_bytes", stat: "memory.stat", inact: "total_inactive_file", unlimitedAtOrAbove: 1 << 62}
		default:
			continue
		}
		for p := path.Clean("/" + parts[2]); ; p = path.Dir(p) {
			d := c
			d.dir = path.Join(root, p)
			if _, err := os.Stat(path.Join(d.dir, d.limit)); err == nil {
				out = append(out, d)
			}
			if p == "/" {
				break
			}
		}
	}
	return out
}

// cgroupFree is a cgroup's limit less its usage (less its inactive file
// cache); false where it has no limit or cannot be read.
func cgroupFree(c cgroup) (int64, bool) {
	read := func(name string) (string, bool) {
		b, err := os.ReadFile(path.Join(c.dir, name))
		return strings.TrimSpace(string(b)), err == nil
	}
	ls, ok := read(c.limit)
	if !ok || ls == c.unlimitedWord {
		return 0, false
	}
	limit, err := strconv.ParseInt(ls, 10, 64)
	if err != nil || c.unlimitedAtOrAbove > 0 && limit >= c.unlimitedAtOrAbove {
		return 0, false
	}
	us, ok := read(c.usage)
	usage, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil {
		return 0, false
	}
	if st, ok := read(c.stat); ok {
		for _, line := range strings.Split(st, "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == c.inact {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n <= usage {
					usage -= n
				}
			}
		}
	}
	return limit - usage, true
}

// ParseBytes reads an amount of memory: a number of bytes, or a number with
// a unit: B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers
// of 1024); "4GiB", "1.5GB", "8000000000".
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not an amount of memory (want bytes, or a number with a unit such as 4GiB)", s)
	}
	if v*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("%q: more bytes than a 64-bit count holds", s)
	}
	return int64(v * mult), nil
}
