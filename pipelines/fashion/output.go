package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
)

// output is the run's output directory, with what the run reads (input,
// the directory of --input, the glob of its IDX files): a run never
// removes or overwrites one of its inputs, and its output directory is
// not the filesystem root (jobfiles.Output.Check).
func (c Config) output(input string) jobfiles.Output {
	o := jobfiles.Output{Program: "fashion", Dir: c.Output, Run: c.FilesRun, Files: outputFiles}
	add := func(flag, path string) {
		if path != "" && !strings.HasPrefix(path, embeddedScheme) {
			o.Inputs = append(o.Inputs, jobfiles.Input{Flag: flag, Path: path})
		}
	}
	for _, s := range c.Sources {
		add("input", s.Images)
		add("input", s.Labels)
	}
	if c.Model == ModelKNN {
		add("data_dir", c.Reference.Images)
		add("data_dir", c.Reference.Labels)
	} else {
		add("model_path", c.MLP)
	}
	if input != "" && !strings.Contains(input, "://") {
		if st, err := os.Stat(input); err == nil && st.IsDir() {
			for _, g := range []string{"*images-idx3-ubyte*", "*labels-idx1-ubyte*"} {
				o.Inputs = append(o.Inputs, jobfiles.Input{Flag: "input", Path: filepath.Join(input, g), Glob: true})
			}
		}
	}
	return o
}
