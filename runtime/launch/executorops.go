package launch

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/beamgpu/beamgpu/runtime/backend"
)

// ImageOpsLabel is the worker image's label that lists the GPU ops its
// executor serves, comma separated (the root Dockerfile; make image fills it
// in with containers/executor-ops.sh's list). The image also holds the list
// in ImageOpsFile, one op a line.
const (
	ImageOpsLabel = "org.beamgpu.executor.ops"
	ImageOpsFile  = "/opt/beamgpu/executor-ops.txt"
)

// ReadExecutorOps reads a list of the ops a worker image's executor serves:
// the file the image's build wrote (make image: out/image/executor-ops.txt,
// the same list as the image's label; containers/build-worker.sh:
// executor-ops.txt), or the label's value saved from `docker inspect`: ops
// one a line or comma separated, '#' starting a comment line.
func ReadExecutorOps(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--executor_ops: %w", err)
	}
	ops := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, op := range strings.Split(line, ",") {
			op = strings.TrimSpace(op)
			if op == "" {
				continue
			}
			if strings.ContainsAny(op, " \t\"'") {
				return nil, fmt.Errorf("--executor_ops=%s: %q is not an op name", path, op)
			}
			ops[op] = true
		}
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("--executor_ops=%s lists no op: an image's build writes the list (containers/executor-ops.sh; make image writes out/image/executor-ops.txt)", path)
	}
	return ops, nil
}

// imageExecutor is the executor of the workers' image, known from its list
// of ops (--executor_ops): a step whose op it does not serve runs on the CPU
// under auto and is refused under gpu (backend.OpServer).
type imageExecutor struct {
	ops     map[string]bool
	from    string    // the --executor_ops file
	refused *refusals // the ops asked for and not served
}

// refusals are the ops an image's executor was asked for and does not
// serve: under auto their steps run on the CPU, and the launch warns.
type refusals struct {
	mu  sync.Mutex
	ops map[string]bool
}

// imageOpsWarnings are the plan's warnings of the ops the workers' image
// does not serve (steps the selector put on the CPU under auto).
func (f Flags) imageOpsWarnings() []string {
	if f.imageOps == nil {
		return nil
	}
	f.imageOps.mu.Lock()
	defer f.imageOps.mu.Unlock()
	var out []string
	for op := range f.imageOps.ops {
		out = append(out, fmt.Sprintf("executor-ops: the worker image's executor does not serve %s (--executor_ops=%s): its steps run on the CPU of their workers; build an image whose executor serves it (make image EXECUTOR=..., docs/writing-a-step.md)", op, f.ExecutorOps))
	}
	sort.Strings(out)
	return out
}

func (imageExecutor) Available() (bool, string) {
	return true, "the workers run GPU ops in the worker image's executor"
}

// Serves implements backend.OpServer.
func (e imageExecutor) Serves(op string) (bool, string) {
	if e.ops[op] {
		return true, ""
	}
	if e.refused != nil {
		e.refused.mu.Lock()
		e.refused.ops[op] = true
		e.refused.mu.Unlock()
	}
	names := make([]string, 0, len(e.ops))
	for n := range e.ops {
		names = append(names, n)
	}
	sort.Strings(names)
	return false, fmt.Sprintf("the worker image's executor does not serve %s (--executor_ops=%s lists %s): build an image whose executor serves it (make image EXECUTOR=./path/to/your-executor, see docs/writing-a-step.md)",
		op, e.from, strings.Join(names, ", "))
}

// imageExecutor returns the workers' image executor: the ops of
// --executor_ops where given, else one taken to serve every op (nothing to
// check against).
func (f *Flags) imageExecutor() (backend.Executor, error) {
	if f.ExecutorOps == "" {
		return remoteExecutor{}, nil
	}
	ops, err := ReadExecutorOps(f.ExecutorOps)
	if err != nil {
		return nil, err
	}
	f.imageOps = &refusals{ops: map[string]bool{}}
	return imageExecutor{ops: ops, from: f.ExecutorOps, refused: f.imageOps}, nil
}
