package onnxstep

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// Load reads, checks and prepares the model at name: a local path or any
// path package files opens (gs://... in a pipeline, where package stepbeam
// registers Beam's filesystems). Its external data files are read from the
// model's directory and none may lie outside it, through a symbolic link
// either. Every error names the file and the reason.
func Load(ctx context.Context, name string) (*onnx.Model, error) {
	dir, base := filepath.Dir(name), filepath.Base(name)
	if scheme, rest, ok := strings.Cut(name, "://"); ok {
		// path.Dir would clean gs://b to gs:/b; a file at the scheme's root
		// (embedded://m.onnx) is in the directory scheme://.
		dir, base = scheme+"://", rest
		if i := strings.LastIndex(rest, "/"); i >= 0 {
			dir, base = scheme+"://"+rest[:i], rest[i+1:]
		}
	}
	m, err := onnx.Load(files.Dir(ctx, dir), base)
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil { // "onnx: base: reason"
			err = inner
		}
		return nil, fmt.Errorf("onnx: %s: %w", name, err)
	}
	return m, nil
}
