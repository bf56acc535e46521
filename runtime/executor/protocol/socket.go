package protocol

import (
	"fmt"
	"os"
	"path/filepath"
)

// SocketName is the socket's file name inside the directory of NewSocketDir.
const SocketName = "executor.sock"

// maxSocketPath is the longest socket path every Unix accepts (sun_path is
// 108 bytes on Linux, 104 on the BSDs, including the NUL).
const maxSocketPath = 103

// EnvParent is the environment variable in which a client names itself
// (its process id) to the executor it starts: the executor exits when that
// process is no longer its parent.
const EnvParent = "BEAMGPU_EXECUTOR_PARENT"

// SocketDirPrefix starts the name of the directories NewSocketDir makes,
// each for one executor alone: an executor removes its socket's directory
// on exit only if it made it or the name says it was made for it.
const SocketDirPrefix = "beamgpu-executor-"

// NewSocketDir creates a private directory (mode 0700) for one executor's
// socket, under $XDG_RUNTIME_DIR when it is set and usable, else under
// os.TempDir(), and returns it with the socket path inside it. The caller
// removes the directory when the executor is gone.
func NewSocketDir() (dir, socket string, err error) {
	var bases []string
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		bases = append(bases, x)
	}
	bases = append(bases, os.TempDir(), "/tmp")
	var firstErr error
	for _, base := range bases {
		if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
			continue
		}
		// mkdtemp's name is 10 random digits; check the length it will have.
		if len(filepath.Join(base, "beamgpu-executor-0123456789", SocketName)) > maxSocketPath {
			continue
		}
		dir, err := os.MkdirTemp(base, SocketDirPrefix)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			os.Remove(dir)
			return "", "", err
		}
		return dir, filepath.Join(dir, SocketName), nil
	}
	if firstErr == nil {
		return "", "", fmt.Errorf("executor: socket directory: no usable directory among %v (each must exist and give a socket path under %d bytes)", bases, maxSocketPath)
	}
	return "", "", fmt.Errorf("executor: socket directory: %w", firstErr)
}
