package onnx_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
)

// Scoreboard counts conformance results per operator.
type Scoreboard struct {
	Passed, Run, Skipped map[string]int
	Reasons              map[string]map[string]bool
	Failed               []string
	Outside              int
}

func newScoreboard() *Scoreboard {
	return &Scoreboard{Passed: map[string]int{}, Run: map[string]int{}, Skipped: map[string]int{}, Reasons: map[string]map[string]bool{}}
}

func (s *Scoreboard) add(c onnxtest.Conformance, err error, skip string) {
	for _, op := range c.Ops {
		switch {
		case skip != "":
			s.Skipped[op]++
			if s.Reasons[op] == nil {
				s.Reasons[op] = map[string]bool{}
			}
			s.Reasons[op][skip] = true
		case err == nil:
			s.Passed[op]++
			s.Run[op]++
		default:
			s.Run[op]++
		}
	}
	if err != nil && skip == "" {
		s.Failed = append(s.Failed, fmt.Sprintf("%s: %v", c.ID(), err))
	}
}

// String is the scoreboard: one line per operator.
func (s *Scoreboard) String() string {
	var b strings.Builder
	var ops []string
	for op := range s.Run {
		ops = append(ops, op)
	}
	for op := range s.Skipped {
		if _, ok := s.Run[op]; !ok {
			ops = append(ops, op)
		}
	}
	sort.Strings(ops)
	fmt.Fprintf(&b, "%-22s %7s %5s %8s  %s\n", "operator", "passed", "run", "skipped", "why skipped")
	for _, op := range ops {
		var why []string
		for r := range s.Reasons[op] {
			why = append(why, r)
		}
		sort.Strings(why)
		fmt.Fprintf(&b, "%-22s %7d %5d %8d  %s\n", op, s.Passed[op], s.Run[op], s.Skipped[op], strings.Join(why, "; "))
	}
	return b.String()
}

// cpuConformance runs the suite on the CPU.
func cpuConformance(t testing.TB) (board *Scoreboard, passed, run, skipped int) {
	tests, outside := onnxtest.ConformanceTests(t)
	board = newScoreboard()
	board.Outside = outside
	for _, c := range tests {
		if why, ok := onnxtest.Skips[c.ID()]; ok {
			board.add(c, nil, why)
			skipped++
			continue
		}
		err := onnxtest.RunConformance(t, c, func(m *onnx.Model, in []nd.Array) ([]nd.Array, error) { return m.Run(in) })
		board.add(c, err, "")
		if err == nil {
			passed++
		}
	}
	return board, passed, len(tests) - skipped, skipped
}

// TestConformance runs the suite on the CPU.
func TestConformance(t *testing.T) {
	board, passed, run, skipped := cpuConformance(t)
	t.Logf("ONNX conformance on the CPU (libonnx-testdata, suites %s): %d passed of %d run, %d skipped; %d tests use operators outside the op set\n%s",
		strings.Join(onnxtest.Suites, ", "), passed, run, skipped, board.Outside, board)
	for _, f := range board.Failed {
		t.Error(f)
	}
}
