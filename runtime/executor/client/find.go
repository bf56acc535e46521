package client

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
)

// DefaultPath is where the worker container ships the executor.
const DefaultPath = "/opt/beamgpu/bin/beamgpu-executor"

// EnvPath names the environment variable that gives the executor's path
// when no flag does.
const EnvPath = "BEAMGPU_EXECUTOR"

// FlagName is the name of the flag callers conventionally give the
// executor's path with; it is used in messages.
const FlagName = "gpu_executor"

// defaultPath is DefaultPath; tests change it.
var defaultPath = DefaultPath

// Errors of the client; match them with errors.Is. An op's failure also
// matches protocol.ErrOutOfMemory (the batch does not fit: split it and
// retry) or protocol.ErrFatal (the executor failed fatally and exits:
// retryable, on a new executor) where its status says so.
var (
	// ErrUnavailable: no executor binary can be found or started.
	ErrUnavailable = errors.New("GPU executor: not available")
	// ErrExecutorDied: the executor process died (or its connection broke)
	// during the call. Retryable: a new executor is started on next use.
	ErrExecutorDied = errors.New("GPU executor: died")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("GPU executor: client closed")
	// ErrNoArena: the batch's shared memory cannot be had (the system's
	// memory, or Config.MaxArena): a smaller batch may go; else run it
	// elsewhere.
	ErrNoArena = errors.New("GPU executor: no shared memory for the batch")
)

// IsRetryable reports whether err is a failure of the executor rather than
// of the batch, so the same call may succeed on a new executor.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrExecutorDied) || errors.Is(err, protocol.ErrFatal)
}

// Find returns the executor binary to use: explicit (a --gpu_executor
// value) if set, else $BEAMGPU_EXECUTOR if set, else DefaultPath. The first
// of those that is set must be an executable file; the error wraps
// ErrUnavailable and says what was tried, e.g. "GPU executor: not available:
// --gpu_executor not set, $BEAMGPU_EXECUTOR not set,
// /opt/beamgpu/bin/beamgpu-executor not found".
func Find(explicit string) (string, error) {
	if explicit != "" {
		if err := executable(explicit); err != nil {
			return "", fmt.Errorf("%w: --%s=%s: %v", ErrUnavailable, FlagName, explicit, err)
		}
		return explicit, nil
	}
	tried := []string{"--" + FlagName + " not set"}
	if env := os.Getenv(EnvPath); env != "" {
		if err := executable(env); err != nil {
			return "", fmt.Errorf("%w: --%s not set, $%s=%s: %v", ErrUnavailable, FlagName, EnvPath, env, err)
		}
		return env, nil
	}
	tried = append(tried, "$"+EnvPath+" not set")
	if err := executable(defaultPath); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			tried = append(tried, defaultPath+" not found")
		} else {
			tried = append(tried, fmt.Sprintf("%s: %v", defaultPath, err))
		}
		return "", fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(tried, ", "))
	}
	return defaultPath, nil
}

// reason is part of an error's message, never an error of its own.
type reason string

func (r reason) Error() string { return string(r) }

// executable says why path is not an executable file (nil when it is).
func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return reason("not a regular file")
	case fi.Mode().Perm()&0o111 == 0:
		return reason(fmt.Sprintf("not executable (mode %v)", fi.Mode().Perm()))
	}
	return nil
}
