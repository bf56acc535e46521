// Command beamgpu-ptx compiles a module's CUDA kernels to the PTX it embeds.
//
// It uses the toolchain, flags and targets of beamgpu's own kernels.
//
// Run it from the root of a module, beamgpu's or a module of steps of your
// own that requires beamgpu (go get -tool github.com/beamgpu/beamgpu/cmd/beamgpu-ptx
// makes it go tool beamgpu-ptx):
//
//	go tool beamgpu-ptx                  # every kernels.cu under . -> kernels.ptx beside it
//	go tool beamgpu-ptx -check           # fail if a committed kernels.ptx is not what its kernels.cu compiles to
//	eval "$(go tool beamgpu-ptx -env)"   # the cgo environment of a -tags cuda build, vet or test
//
// Arguments, when given, are the kernels.cu files or the directories to
// search instead of the current one. A directory holding a go.mod of its own
// (another module) is not searched, nor are hidden directories and vendor.
//
// The toolchain: nvcc and ptxas of CUDA 11.8 from Debian bookworm's packages
// nvidia-cuda-toolkit and nvidia-cuda-dev, fetched the first time (about 860 MB
// downloaded, 90 MB kept; no root needed) by beamgpu's
// containers/cuda-headers.sh into its cache, ${BEAMGPU_CUDA_DIR:-$HOME/.cache/beamgpu/cuda-11.8};
// later runs find it there. It needs a Debian or Ubuntu system (dpkg,
// apt-get), a host C++ compiler (g++; NVCC_HOST_CXX names another) and the
// Debian archive keyring.
//
// The flags: PTX for the virtual architecture compute_70 (so the driver
// compiles it for any GPU of compute capability 7.0 or more: V100, T4, A100,
// L4, H100), no fast math and no FMA contraction (-fmad=false, IEEE division
// and square root, denormals kept), so that the kernels compute what the CPU
// code does. -check compares without the PTX's header comments (the
// compiler's version and build ID) and then assembles each PTX with ptxas
// for sm_75, sm_80 and sm_90, which catches invalid PTX without a GPU.
//
// -env prints export lines (CGO_ENABLED, CGO_CFLAGS, CGO_LDFLAGS, NVCC,
// BEAMGPU_CUDA_DIR) with the toolchain's CUDA headers and link stubs: a
// -tags cuda build needs them ("cuda.h: No such file or directory" without).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// The project's PTX target and the real architectures -check assembles for.
const (
	Arch   = "compute_70"
	Verify = "sm_75,sm_80,sm_90"
)

// nvccFlags are nvcc's flags for a kernels.cu, before -o and the file.
func nvccFlags(arch, hostCXX string) []string {
	return []string{"-ptx", "-arch=" + arch, "-fmad=false", "-prec-div=true", "-prec-sqrt=true", "-ftz=false",
		"-ccbin", hostCXX, "-allow-unsupported-compiler"}
}

func main() {
	check := flag.Bool("check", false, "compile into a temporary directory and fail if a committed kernels.ptx differs (or is missing); then assemble each with ptxas")
	env := flag.Bool("env", false, "print the cgo environment of a -tags cuda build (export lines for eval) and exit")
	arch := flag.String("arch", Arch, "the virtual architecture of the PTX")
	verify := flag.String("verify", Verify, "the real architectures -check assembles each PTX for, comma separated")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: beamgpu-ptx [-check | -env] [kernels.cu or directory ...]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*check, *env, *arch, strings.Split(*verify, ","), flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "beamgpu-ptx:", err)
		os.Exit(1)
	}
}

func run(check, env bool, arch string, verify, args []string) error {
	tc, err := toolchain()
	if err != nil {
		return err
	}
	if env {
		fmt.Printf("export CGO_ENABLED=1\nexport CGO_CFLAGS='-O2 -g %s'\nexport CGO_LDFLAGS='%s'\nexport NVCC=%s\nexport BEAMGPU_CUDA_DIR=%s\n",
			tc["CGO_CFLAGS"], tc["CGO_LDFLAGS"], tc["NVCC"], tc["BEAMGPU_CUDA_DIR"])
		return nil
	}
	if len(args) == 0 {
		args = []string{"."}
	}
	sources, err := findSources(args)
	if err != nil {
		return err
	}
	if len(sources) == 0 {
		return fmt.Errorf("no kernels.cu under %s", strings.Join(args, " "))
	}
	hostCXX := os.Getenv("NVCC_HOST_CXX")
	if hostCXX == "" {
		hostCXX = "g++"
	}
	nvcc := tc["NVCC"]
	ptxas := filepath.Join(tc["BEAMGPU_CUDA_DIR"], "usr", "bin", "ptxas")
	tmp, err := os.MkdirTemp("", "beamgpu-ptx-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	failed := 0
	for i, cu := range sources {
		ptx := strings.TrimSuffix(cu, ".cu") + ".ptx"
		out := filepath.Join(tmp, fmt.Sprintf("%d.ptx", i))
		if err := compile(nvcc, nvccFlags(arch, hostCXX), cu, out); err != nil {
			return err
		}
		if !check {
			if err := os.Rename(out, ptx); err != nil {
				if err := copyFile(out, ptx); err != nil {
					return err
				}
			}
			fmt.Printf("ptx: %s -> %s\n", cu, ptx)
			continue
		}
		if msg := compare(ptx, out); msg != "" {
			fmt.Printf("ptx-check: %s is not what %s compiles to: run beamgpu-ptx (go tool beamgpu-ptx, or make ptx in beamgpu)\n%s", ptx, cu, msg)
			failed++
			continue
		}
		for _, sm := range verify {
			cmd := exec.Command(ptxas, "-arch="+strings.TrimSpace(sm), "-o", os.DevNull, ptx)
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("ptxas -arch=%s %s: %v\n%s", sm, ptx, err, b)
			}
		}
		fmt.Printf("ptx-check: %s ok (assembles for %s)\n", ptx, strings.Join(verify, " "))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d kernels.ptx differ from their kernels.cu", failed, len(sources))
	}
	return nil
}

// toolchain runs beamgpu's containers/cuda-headers.sh (fetching the
// toolchain the first time) and returns the NAME=VALUE lines it prints.
func toolchain() (map[string]string, error) {
	script := os.Getenv("BEAMGPU_CUDA_HEADERS")
	if script == "" {
		dir, err := beamgpuDir()
		if err != nil {
			return nil, err
		}
		script = filepath.Join(dir, "containers", "cuda-headers.sh")
	}
	cmd := exec.Command("bash", script)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", script, err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	for _, k := range []string{"CGO_CFLAGS", "CGO_LDFLAGS", "NVCC", "BEAMGPU_CUDA_DIR"} {
		if vars[k] == "" {
			return nil, fmt.Errorf("%s printed no %s", script, k)
		}
	}
	return vars, nil
}

// beamgpuDir is the directory of the beamgpu module the current module
// builds with: its own checkout, a replace directive's, or the module cache.
func beamgpuDir() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/beamgpu/beamgpu")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		return "", errors.New("cannot find the beamgpu module (go list -m github.com/beamgpu/beamgpu): run this in a module that requires it, or set BEAMGPU_CUDA_HEADERS to its containers/cuda-headers.sh")
	}
	return dir, nil
}

// findSources returns the kernels.cu files of args (files, or directories
// searched), sorted.
func findSources(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		err = filepath.WalkDir(a, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				name := d.Name()
				if path != a && (strings.HasPrefix(name, ".") || name == "vendor" || exists(filepath.Join(path, "go.mod"))) {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Name() == "kernels.cu" {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// compile runs nvcc on cu, in cu's directory, writing the PTX to out.
func compile(nvcc string, flags []string, cu, out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.Command(nvcc, append(flags, "-o", abs, filepath.Base(cu))...)
	cmd.Dir = filepath.Dir(cu)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nvcc %s: %v\n%s", cu, err, b)
	}
	return nil
}

// compare returns how the committed PTX have differs from want, without
// their comment lines; "" when they agree.
func compare(have, want string) string {
	h, err := os.ReadFile(have)
	if err != nil {
		return fmt.Sprintf("  %v\n", err)
	}
	w, err := os.ReadFile(want)
	if err != nil {
		return fmt.Sprintf("  %v\n", err)
	}
	hl, wl := body(h), body(w)
	for i := 0; i < max(len(hl), len(wl)); i++ {
		var a, b string
		if i < len(hl) {
			a = hl[i]
		}
		if i < len(wl) {
			b = wl[i]
		}
		if a != b {
			return fmt.Sprintf("  first difference, line %d of the body:\n  - %s\n  + %s\n", i+1, a, b)
		}
	}
	return ""
}

// body returns the lines of a PTX file that are not comments.
func body(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "//") {
			out = append(out, l)
		}
	}
	return out
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
