package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/gke/workload"
	"github.com/beamgpu/beamgpu/runtime/launch"
	"github.com/distribution/reference"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The worker image's Dockerfile (the repository root's), parsed with
// BuildKit's own Dockerfile parser and instruction parser (what `docker
// build` runs) and checked against what it must agree with: the Beam version
// of go.mod, the executor path of the client, the binaries the GKE manifests
// run, and the build script that CI runs. No Docker engine is needed.

const (
	beamModule = "github.com/apache/beam/sdks/v2"
	beamImage  = "apache/beam_go_sdk"
	beamDir    = "/opt/apache/beam"
	beamBoot   = "/opt/apache/beam/boot"
	cudaImage  = "nvidia/cuda"
	// buildScript is what the builder stage runs; CI (.ci/run) runs it too.
	buildScript = "containers/build-worker.sh"
	// entrypoint is the image's entrypoint (cmd/beamgpu-boot), which applies
	// workerEnv (copied from the build context to workerEnvPath) and then
	// starts Beam's boot loader (worker.env's BEAM_BOOT).
	entrypoint    = "/opt/beamgpu/bin/beamgpu-boot"
	workerEnv     = "containers/worker.env"
	workerEnvPath = "/opt/beamgpu/worker.env"
	// opsLabel and opsFile list the ops the image's executor serves
	// (launch.ImageOpsLabel, launch.ImageOpsFile).
	opsLabel = "org.beamgpu.executor.ops"
	opsFile  = "/opt/beamgpu/executor-ops.txt"
)

// imageBinaries are the binaries the worker image holds beside the executor,
// by name under workload.BinDir, which the GKE workloads run.
var imageBinaries = []string{"landsat", "fashion", "fashion-train"}

// cudaTag is an nvidia/cuda tag: version, flavour (base, runtime, devel, ...)
// and OS, e.g. 12.4.1-runtime-ubuntu22.04.
var cudaTag = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)-([a-z]+(?:-[a-z]+)*?)-([a-z]+[0-9.]+)$`)

// beamVersion is the Beam Go SDK version that go.mod selects, as its images
// are tagged: v2.77.0 -> 2.77.0. (A test binary of a library package carries
// no module dependencies in its build information, so the go command says.)
func beamVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-json", beamModule).Output()
	require.NoError(t, err, "go list -m %s", beamModule)
	var m struct {
		Version string
		Replace *struct{ Version string }
	}
	require.NoError(t, json.Unmarshal(out, &m))
	v := m.Version
	if m.Replace != nil {
		require.NotEmpty(t, m.Replace.Version, "%s is replaced by a directory: no image version to check", beamModule)
		v = m.Replace.Version
	}
	require.NotEmpty(t, v)
	return strings.TrimPrefix(v, "v")
}

// installed is a file the final stage copies from another stage.
type installed struct {
	stage int // its index
	src   string
}

// dockerfileProblems parses a Dockerfile and returns what is wrong with it as
// the worker image, one line each; none when all is well.
func dockerfileProblems(src []byte, beam string) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	res, err := parser.Parse(bytes.NewReader(src))
	if err != nil {
		return []string{"parse: " + err.Error()}
	}
	for _, w := range res.Warnings {
		bad("parser warning: %s", w.Short)
	}
	// The lint rules of `docker build --check` that BuildKit runs while it
	// parses instructions (FROM ... AS casing, stage names, MAINTAINER).
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		bad("check %s, line %d: %s", rule, line, msg)
	}})
	stages, metaArgs, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return append(problems, "instructions: "+err.Error())
	}
	if len(metaArgs) > 0 {
		bad("ARG before the first FROM: images must be pinned literally, where a reader (and this test) sees the version")
	}
	if len(stages) < 2 {
		return append(problems, fmt.Sprintf("%d stages: want a builder stage and a runtime stage", len(stages)))
	}

	// stageNamed is the index of the stage a FROM or COPY --from names, if
	// it names one defined before index before; else -1.
	stageNamed := func(name string, before int) int {
		for i := range before {
			if stages[i].Name != "" && strings.EqualFold(stages[i].Name, name) || fmt.Sprint(i) == name {
				return i
			}
		}
		return -1
	}
	// pinned parses an image reference and says whether it is pinned: an
	// explicit tag other than latest, or a digest.
	pinned := func(where, ref string) reference.Named {
		if strings.Contains(ref, "$") {
			bad("%s: image %q depends on a build argument: pin it literally", where, ref)
			return nil
		}
		named, err := reference.ParseNormalizedNamed(ref)
		if err != nil {
			bad("%s: image %q: %v", where, ref, err)
			return nil
		}
		_, digested := named.(reference.Digested)
		tagged, isTagged := named.(reference.Tagged)
		if !digested && (!isTagged || tagged.Tag() == "latest") {
			bad("%s: image %q is not pinned: give an exact version tag (not latest) or a digest", where, ref)
			return nil
		}
		return named
	}
	// roots[i] is the image stage i starts from, following FROM <stage>.
	roots := make([]reference.Named, len(stages))
	for i := range stages {
		s := &stages[i]
		where := fmt.Sprintf("FROM %s (stage %d)", s.BaseName, i)
		switch prev := stageNamed(s.BaseName, i); {
		case prev >= 0:
			roots[i] = roots[prev]
		case s.BaseName != "scratch":
			roots[i] = pinned(where, s.BaseName)
		}
		for _, c := range s.Commands {
			if cp, ok := c.(*instructions.CopyCommand); ok && cp.From != "" && stageNamed(cp.From, i) < 0 {
				pinned(fmt.Sprintf("%s (stage %d)", cp.String(), i), cp.From)
			}
		}
	}
	// cudaVersion checks that stage i starts from a CUDA 12 image of the
	// given flavour and returns its version.
	cudaVersion := func(i int, flavour string) string {
		root := roots[i]
		if root == nil {
			bad("stage %d: no pinned base image (want %s:12.x.y-%s-...)", i, cudaImage, flavour)
			return ""
		}
		tagged, ok := root.(reference.Tagged)
		m := []string(nil)
		if ok {
			m = cudaTag.FindStringSubmatch(tagged.Tag())
		}
		if reference.FamiliarName(root) != cudaImage || m == nil || m[4] != flavour {
			bad("stage %d: base image %s: want %s:12.x.y-%s-<os>", i, reference.FamiliarString(root), cudaImage, flavour)
			return ""
		}
		if m[1] != "12" {
			bad("stage %d: base image %s is CUDA %s: the executor needs CUDA 12 (gorgonia.org/cu does not build against 13)", i, reference.FamiliarString(root), m[1])
		}
		return strings.Join(m[1:4], ".") + "-" + m[5]
	}

	final := &stages[len(stages)-1]
	runtimeCUDA := cudaVersion(len(stages)-1, "runtime")

	// The Beam boot loader, of go.mod's Beam version.
	beamCopies := 0
	files := map[string]installed{}
	for _, c := range final.Commands {
		cp, ok := c.(*instructions.CopyCommand)
		if !ok || cp.From == "" {
			continue
		}
		if from := stageNamed(cp.From, len(stages)-1); from >= 0 {
			for _, s := range cp.SourcePaths {
				dest := cp.DestPath
				if len(cp.SourcePaths) > 1 || strings.HasSuffix(dest, "/") {
					dest = path.Join(dest, path.Base(s))
				}
				files[path.Clean(dest)] = installed{stage: from, src: path.Clean(s)}
			}
			continue
		}
		named, err := reference.ParseNormalizedNamed(cp.From)
		if err != nil || reference.FamiliarName(named) != beamImage {
			continue
		}
		beamCopies++
		tag := ""
		if tagged, ok := named.(reference.Tagged); ok {
			tag = tagged.Tag()
		}
		if tag != beam {
			bad("%s: Beam image version %q, but go.mod's Beam is %s", cp.String(), tag, beam)
		}
		if len(cp.SourcePaths) != 1 || path.Clean(cp.SourcePaths[0]) != beamDir || path.Clean(cp.DestPath) != beamDir {
			bad("%s: want COPY --from=%s:%s %s %s", cp.String(), beamImage, beam, beamDir, beamDir)
		}
	}
	if beamCopies == 0 {
		bad("the final stage does not COPY --from=%s:%s %s %s", beamImage, beam, beamDir, beamDir)
	}

	// The entrypoint: beamgpu-boot, in exec form, which starts Beam's boot
	// loader after applying worker.env.
	var entry *instructions.EntrypointCommand
	for _, c := range final.Commands {
		if e, ok := c.(*instructions.EntrypointCommand); ok {
			entry = e
		}
	}
	switch {
	case entry == nil:
		bad("the final stage has no ENTRYPOINT: want ENTRYPOINT [%q]", entrypoint)
	case entry.PrependShell:
		bad("%s: shell form; want exec form ENTRYPOINT [%q]", entry.String(), entrypoint)
	case !slices.Equal(entry.CmdLine, []string{entrypoint}):
		bad("%s: want ENTRYPOINT [%q]", entry.String(), entrypoint)
	}

	// The worker's environment is worker.env's alone: copied from the build
	// context, and no ENV of the final stage sets what it sets.
	envCopied := false
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.CopyCommand:
			if c.From == "" && len(c.SourcePaths) == 1 && path.Clean(c.SourcePaths[0]) == workerEnv && path.Clean(c.DestPath) == workerEnvPath {
				envCopied = true
			}
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				if workerEnvKeys[kv.Key] {
					bad("%s: %s is set by %s (the one source of the worker's environment, which the rehearsal applies too): set it there", c.String(), kv.Key, workerEnv)
				}
			}
		}
	}
	if !envCopied {
		bad("the final stage does not COPY %s %s (the worker's environment, which %s applies)", workerEnv, workerEnvPath, entrypoint)
	}
	// The label listing the executor's ops, from the build argument make
	// image fills in.
	labelled := false
	for _, c := range final.Commands {
		if l, ok := c.(*instructions.LabelCommand); ok {
			for _, kv := range l.Labels {
				labelled = labelled || kv.Key == opsLabel
			}
		}
	}
	if !labelled {
		bad("the final stage has no LABEL %s (the ops its executor serves, which a launch checks)", opsLabel)
	}

	// The executor at the client's default path, and the binaries the GKE
	// workloads run, all from the builder stage, which runs the build script.
	exe, ok := files[client.DefaultPath]
	if !ok {
		bad("nothing is copied to %s (client.DefaultPath) in the final stage", client.DefaultPath)
		return problems
	}
	if path.Base(exe.src) != "beamgpu-executor" {
		bad("%s comes from %s: want the build script's beamgpu-executor", client.DefaultPath, exe.src)
	}
	builder := &stages[exe.stage]
	builderCUDA := cudaVersion(exe.stage, "devel")
	if runtimeCUDA != "" && builderCUDA != "" && builderCUDA != runtimeCUDA {
		bad("the builder's CUDA %s and the runtime's CUDA %s differ: the executor needs the cuBLAS it was built against", builderCUDA, runtimeCUDA)
	}
	outDir := ""
	for _, c := range builder.Commands {
		run, ok := c.(*instructions.RunCommand)
		if !ok {
			continue
		}
		words := strings.Fields(strings.Join(run.CmdLine, " "))
		for i, w := range words {
			if w != buildScript && w != "./"+buildScript {
				continue
			}
			outDir = "?"
			for j := i + 1; j < len(words); j++ {
				if words[j] == "--out" && j+1 < len(words) {
					outDir = path.Clean(words[j+1])
				} else if d, ok := strings.CutPrefix(words[j], "--out="); ok {
					outDir = path.Clean(d)
				}
			}
		}
	}
	if outDir == "" || outDir == "?" {
		bad("the builder stage %q does not RUN %s --out DIR", builder.Name, buildScript)
	}
	for _, want := range append([]string{client.DefaultPath, entrypoint, opsFile}, binPaths()...) {
		f, ok := files[want]
		if !ok {
			bad("nothing is copied to %s in the final stage", want)
			continue
		}
		if f.stage != exe.stage {
			bad("%s comes from stage %d, not from the builder %q", want, f.stage, builder.Name)
		}
		if outDir != "" && path.Dir(f.src) != outDir {
			bad("%s comes from %s, not from the build script's --out directory %s", want, f.src, outDir)
		}
		if want != client.DefaultPath && want != opsFile && path.Base(f.src) != path.Base(want) {
			bad("%s comes from %s: want %s", want, f.src, path.Base(want))
		}
		if want == opsFile && path.Base(f.src) != "executor-ops.txt" {
			bad("%s comes from %s: want the build script's executor-ops.txt", want, f.src)
		}
	}
	return problems
}

// workerEnvKeys are the variables containers/worker.env sets.
var workerEnvKeys = func() map[string]bool {
	keys := map[string]bool{}
	data, _ := os.ReadFile(filepath.Join("..", workerEnv))
	for _, line := range strings.Split(string(data), "\n") {
		if k, _, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
			keys[k] = true
		}
	}
	return keys
}()

// binPaths are the paths of imageBinaries in the image.
func binPaths() []string {
	var ps []string
	for _, b := range imageBinaries {
		ps = append(ps, path.Join(workload.BinDir, b))
	}
	return ps
}

func readDockerfile(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	require.NoError(t, err)
	return src
}

// The Dockerfile is the worker image described above, and what it runs is
// there: the build script, executable, in the build context.
func TestDockerfile(t *testing.T) {
	for _, p := range dockerfileProblems(readDockerfile(t), beamVersion(t)) {
		t.Error(p)
	}
	fi, err := os.Stat(filepath.Join("..", buildScript))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&0o111, "%s is not executable", buildScript)

	// worker.env, read as the image reads it (BEAMGPU_ROOT empty), names the
	// image's boot loader and the executor where the client looks.
	data, err := os.ReadFile(filepath.Join("..", workerEnv))
	require.NoError(t, err)
	vars := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
			vars[k] = strings.ReplaceAll(v, "${BEAMGPU_ROOT}", "")
		}
	}
	assert.Equal(t, beamBoot, vars["BEAM_BOOT"], "%s: BEAM_BOOT", workerEnv)
	assert.Equal(t, client.DefaultPath, vars["BEAMGPU_EXECUTOR"], "%s: BEAMGPU_EXECUTOR", workerEnv)
	assert.Equal(t, launch.ImageOpsLabel, opsLabel)
	assert.Equal(t, launch.ImageOpsFile, opsFile)
}

// .dockerignore (read with the matcher docker uses) leaves no tracked file
// out of the build context: the builder stage copies the whole tree.
func TestDockerignoreKeepsTheSources(t *testing.T) {
	tracked, err := exec.Command("git", "-C", "..", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("no git work tree to list the sources: %v", err)
	}
	f, err := os.Open(filepath.Join("..", ".dockerignore"))
	require.NoError(t, err)
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	require.NoError(t, err)
	require.NotEmpty(t, patterns)
	pm, err := patternmatcher.New(patterns)
	require.NoError(t, err)
	names := strings.Split(strings.TrimRight(string(tracked), "\x00"), "\x00")
	require.Contains(t, names, "go.mod")
	for _, name := range append(names, buildScript) {
		excluded, err := pm.MatchesOrParentMatches(name)
		require.NoError(t, err)
		assert.False(t, excluded, "%s: .dockerignore leaves it out of the build context", name)
	}
	// And it does leave out what it should.
	for _, name := range []string{".git/config", "out/bin/beamgpu-executor", "runtime/x.test"} {
		excluded, err := pm.MatchesOrParentMatches(name)
		require.NoError(t, err)
		assert.True(t, excluded, "%s: in the build context", name)
	}
}

// Each check fails on a Dockerfile broken in its way: a mutation of the real
// one, with the problem it must cause.
func TestDockerfileChecksCatchMistakes(t *testing.T) {
	src := string(readDockerfile(t))
	beam := beamVersion(t)
	require.Empty(t, dockerfileProblems([]byte(src), beam))
	// The FROM lines, with the newline before them (the header comment
	// quotes a FROM line too).
	finalFrom := regexp.MustCompile(`\nFROM nvidia/cuda:12\.[0-9.]+-runtime-[a-z0-9.]+\n`).FindString(src)
	builderFrom := regexp.MustCompile(`\nFROM nvidia/cuda:12\.[0-9.]+-devel-[a-z0-9.]+ AS [a-z0-9_.-]+\n`).FindString(src)
	goImage := regexp.MustCompile(`golang:[0-9][^ ]*`).FindString(src)
	scriptRun := regexp.MustCompile(`containers/build-worker\.sh --out [^ \n]+`).FindString(src)
	require.NotEmpty(t, finalFrom, "the final FROM")
	require.NotEmpty(t, builderFrom, "the builder's FROM")
	require.NotEmpty(t, goImage, "the Go image")
	require.NotEmpty(t, scriptRun, "the build script's RUN")

	beamCopy := fmt.Sprintf("COPY --from=%s:%s %s %s", beamImage, beam, beamDir, beamDir)
	entry := fmt.Sprintf("ENTRYPOINT [%q]", entrypoint)
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"beam version", beamImage + ":" + beam, beamImage + ":2.0.0", `Beam image version "2.0.0", but go.mod's Beam is ` + beam},
		{"no beam copy", beamCopy, "", "does not COPY --from=" + beamImage},
		{"beam copied elsewhere", beamCopy, beamCopy + "/sdk", "want COPY --from=" + beamImage},
		{"shell-form entrypoint", entry, "ENTRYPOINT " + entrypoint, "shell form"},
		{"other entrypoint", entry, `ENTRYPOINT ["/bin/sh", "-c", "exec ` + entrypoint + `"]`, "want ENTRYPOINT"},
		{"boot loader as entrypoint", entry, fmt.Sprintf("ENTRYPOINT [%q]", beamBoot), "want ENTRYPOINT [\"" + entrypoint + "\"]"},
		{"env beside worker.env", entry, "ENV PATH=/opt/beamgpu/bin:$PATH\n" + entry, "PATH is set by " + workerEnv},
		{"no worker.env", "COPY " + workerEnv + " " + workerEnvPath, "", "does not COPY " + workerEnv},
		{"no ops label", "LABEL " + opsLabel, "LABEL other", "has no LABEL " + opsLabel},
		{"no ops file", " " + opsFile + "\n", " /opt/beamgpu/other.txt\n", "nothing is copied to " + opsFile},
		{"no boot wrapper", " /out/beamgpu-boot ", " ", "nothing is copied to " + entrypoint},
		{"no entrypoint", entry, "", "has no ENTRYPOINT"},
		{"executor elsewhere", client.DefaultPath, "/usr/local/bin/beamgpu-executor", "nothing is copied to " + client.DefaultPath},
		{"trainer missing", " /out/fashion-train ", " ", "nothing is copied to " + workload.BinDir + "/fashion-train"},
		{"latest", finalFrom, "\nFROM nvidia/cuda:latest\n", `"nvidia/cuda:latest" is not pinned`},
		{"no tag", goImage, "golang", `"golang" is not pinned`},
		{"build arg", finalFrom, "\nARG CUDA=12.4.1" + regexp.MustCompile(`12\.[0-9.]+`).ReplaceAllLiteralString(finalFrom, "${CUDA}"), "depends on a build argument"},
		{"cuda 13 builder", builderFrom, strings.Replace(builderFrom, ":12.", ":13.", 1), "is CUDA 13"},
		{"cuda 13 runtime", finalFrom, strings.Replace(finalFrom, ":12.", ":13.", 1), "is CUDA 13"},
		{"runtime is not cuda", finalFrom, "\nFROM ubuntu:22.04\n", "want nvidia/cuda:12.x.y-runtime"},
		{"builder is not devel", builderFrom, strings.Replace(builderFrom, "-devel-", "-runtime-", 1), "want nvidia/cuda:12.x.y-devel"},
		{"mismatched cuda", finalFrom, strings.Replace(finalFrom, ":12.", ":12.9", 1), "differ"},
		{"no build script", scriptRun, "go build ./...", "does not RUN " + buildScript},
		{"wrong out dir", scriptRun, buildScript + " --out /elsewhere", "not from the build script's --out directory"},
		{"lint", builderFrom, strings.Replace(builderFrom, " AS ", " as ", 1), "check FromAsCasing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, src, tc.old)
			broken := strings.Replace(src, tc.old, tc.new, 1)
			problems := dockerfileProblems([]byte(broken), beam)
			require.NotEmpty(t, problems)
			assert.Contains(t, strings.Join(problems, "\n"), tc.want)
		})
	}

	t.Run("digest pins", func(t *testing.T) {
		digest := "@sha256:" + strings.Repeat("ab", 32)
		pinned := strings.Replace(src, finalFrom, strings.TrimSuffix(finalFrom, "\n")+digest+"\n", 1)
		assert.Empty(t, dockerfileProblems([]byte(pinned), beam))
		unpinned := strings.Replace(src, finalFrom, "\nFROM nvidia/cuda"+digest+"\n", 1)
		// A digest alone pins, but then the CUDA version is not visible.
		assert.Contains(t, strings.Join(dockerfileProblems([]byte(unpinned), beam), "\n"), "want nvidia/cuda:12.x.y-runtime")
	})
}
