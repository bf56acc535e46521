package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
)

// output is the run's output directory, with what the run reads: a run
// never removes or overwrites one of its inputs, and its output directory
// is neither the filesystem root nor matched by its image glob
// (jobfiles.Output.Check).
func (c Config) output() jobfiles.Output {
	o := jobfiles.Output{Program: "infer", Dir: c.Output, Run: c.RunID, Files: outputFiles,
		Inputs: []jobfiles.Input{{Flag: "model", Path: c.Model}}}
	if c.Labels != "" {
		o.Inputs = append(o.Inputs, jobfiles.Input{Flag: "labels_file", Path: c.Labels})
	}
	switch {
	case len(c.NPYs) > 0:
		for _, n := range c.NPYs {
			o.Inputs = append(o.Inputs, jobfiles.Input{Flag: "input", Path: n.Path})
		}
	case c.JSONL != nil:
		o.Inputs = append(o.Inputs, jobfiles.Input{Flag: "input", Path: c.JSONL.Path})
	default:
		o.Inputs = append(o.Inputs, jobfiles.Input{Flag: "input", Path: imageGlob(*input), Glob: true, Files: c.Images})
	}
	return o
}

// imageGlob is the glob of --input images: a directory means its files.
func imageGlob(glob string) string {
	if !strings.Contains(glob, "://") {
		if st, err := os.Stat(glob); err == nil && st.IsDir() {
			return filepath.Join(glob, "*")
		}
	} else if strings.HasSuffix(glob, "/") {
		return glob + "*"
	}
	return glob
}
