// Package job runs a beamgpu pipeline from a program's main.
//
// Main is the whole of a pipeline program's main: it registers the flags
// of backend selection (--backend, --backend_override, --explain_json,
// --gpu_executor), of the launcher (--runner and Beam's flags, --plan_out,
// --right_fitting, the Dataflow GPU flags) and of the run (--progress),
// checks them before anything is read, builds the pipeline that the
// program's Build function makes, prints the explain report (which
// implementation runs each step, and why), runs the pipeline on the runner
// the flags choose (prism in this process by default, Dataflow, a portable
// job server, or only a plan with --plan_out), prints each step's counts
// and says STUB RUN when any step ran its stand-in, and exits with the
// run's status:
//
//   - 0: the run succeeded;
//   - 1: the pipeline failed, or the program's Report said the run failed;
//   - 2: a flag or the configuration is wrong (nothing was run).
//
// The project's pipelines (pipelines/landsat, pipelines/fashion) are built
// on it; so is the example module's (examples/clipstep). See Example for a
// program's main, and docs/writing-a-step.md for the whole path from a step
// to a run on Dataflow.
//
// RunMain is Main without parsing the command line or exiting, for tests;
// Execute runs a pipeline with a backend selector of the caller's, for tests
// that choose the implementations themselves.
package job
