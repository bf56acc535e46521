package launch

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
)

// ImageWorkerBinaries is where the beamgpu worker image keeps the pipeline
// binaries (the Dockerfile copies landsat, fashion and fashion-train there):
// launching from the image, pass --worker_binary=/opt/beamgpu/bin/<pipeline>.
const ImageWorkerBinaries = "/opt/beamgpu/bin"

// imageRef is a container image reference: REGISTRY/PATH[:TAG][@DIGEST].
var (
	imagePath   = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	imageTag    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	imageDigest = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}$`)
)

// CheckImage checks that a --sdk_container_image reference names the
// registry Dataflow's workers pull it from: REGISTRY/PATH[:TAG][@DIGEST],
// where REGISTRY is a host (it has a '.' or a ':', or is localhost), as
// us-central1-docker.pkg.dev/PROJECT/REPO/worker:v1. A reference without one
// (beamgpu-worker:dev, the tag make image gives by default) is a local name:
// the workers would look for it on Docker Hub. "" is accepted (no image:
// Dataflow's own).
func CheckImage(ref string) error {
	if ref == "" {
		return nil
	}
	name, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest && !imageDigest.MatchString(digest) {
		return fmt.Errorf("--sdk_container_image=%s: digest %q is not ALGORITHM:HEX", ref, digest)
	}
	host, rest, ok := strings.Cut(name, "/")
	if !ok || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return fmt.Errorf("--sdk_container_image=%s names no registry: Dataflow's workers would pull it from Docker Hub (docker.io/library/...); push the image to a registry they can read (make image-push IMAGE=REGION-docker.pkg.dev/PROJECT/REPO/beamgpu-worker:TAG) and pass that reference", ref)
	}
	path, tag := rest, ""
	if i := strings.LastIndex(rest, ":"); i >= 0 {
		path, tag = rest[:i], rest[i+1:]
		if !imageTag.MatchString(tag) {
			return fmt.Errorf("--sdk_container_image=%s: tag %q is not a valid tag", ref, tag)
		}
	}
	if !imagePath.MatchString(path) {
		return fmt.Errorf("--sdk_container_image=%s: %q is not a valid image path (lower-case letters, digits and separators: a registry path has no upper case)", ref, path)
	}
	return nil
}

// workerBinary is the worker binary a Dataflow submission stages:
// --worker_binary where given; else this very binary where it can be one
// (linux/amd64, built with CGO_ENABLED=0, as the image's binaries and make
// dataflow's are); else "", and Beam cross-compiles the pipeline from its
// source directory, which exists only in a source checkout (not in the
// worker image, where --worker_binary is needed).
func workerBinary() string {
	if *jobopts.WorkerBinary != "" {
		return *jobopts.WorkerBinary
	}
	if self, ok := selfAsWorker(); ok {
		return self
	}
	return ""
}

// selfAsWorker returns the running binary's path when Dataflow's workers
// can run it: linux/amd64 and statically built (cgo off).
func selfAsWorker() (string, bool) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return "", false
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	static := false
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" {
			static = s.Value == "0"
		}
	}
	if !static {
		return "", false
	}
	self, err := os.Executable()
	if err != nil || strings.Contains(self, "go-build") {
		// A go run or go test binary lives in a temporary build directory.
		return "", false
	}
	return self, true
}

// workerBinaryNote says in a plan which worker binary a submission stages.
func workerBinaryNote(bin string) string {
	switch {
	case *jobopts.WorkerBinary != "":
		return bin + " (--worker_binary)"
	case bin != "":
		return bin + " (this binary: linux/amd64, built with CGO_ENABLED=0)"
	}
	return "cross-compiled from the pipeline's source at submission (GOOS=linux GOARCH=amd64 CGO_ENABLED=0); from the worker image, pass --worker_binary=" + ImageWorkerBinaries + "/<pipeline>"
}

// buildTempWorker is Beam's cross-compile of the pipeline's main package
// for the workers (a variable for the tests). It finds the main package by
// walking the caller's stack, so it must be called on the program's own
// stack, not on a goroutine of the launcher's.
var buildTempWorker = runnerlib.BuildTempWorkerBinary

// buildWorker cross-compiles the pipeline for the workers (for: "rehearsal"
// or "Dataflow"), saying so before it starts and when it ends: the build
// has settings of its own (CGO_ENABLED=0, -trimpath, GOOS=linux), so its
// first run compiles Beam and every dependency anew, minutes on a small
// machine, with nothing else printed meanwhile.
func buildWorker(ctx context.Context, forWhat string, opts runnerlib.CompileOpts) (string, error) {
	arch := cmp.Or(opts.Arch, "amd64")
	slog.Info("building the worker binary from the pipeline's source (go build -trimpath, GOOS=linux CGO_ENABLED=0): "+
		"a cold build compiles Beam and every dependency and takes minutes on a small machine (README: build times); "+
		"--worker_binary with a binary built once (CGO_ENABLED=0 go build) skips it",
		"for", forWhat, "goarch", arch)
	start := time.Now()
	w, err := buildTempWorker(ctx, opts)
	if err != nil {
		return "", err
	}
	slog.Info("built the worker binary", "for", forWhat, "took", time.Since(start).Round(100*time.Millisecond).String(), "path", w)
	return w, nil
}
