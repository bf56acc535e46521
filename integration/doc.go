// Package integration holds the tests that cross packages:
//
//   - the equivalence harness: every step's GPU implementation, through a
//     real out-of-process executor, against its CPU implementation. In CI
//     the executor is the CPU reference executor (this test binary, started
//     again as the executor); on a GPU machine `make gpu-test` runs the same
//     tests against the CUDA executor (BEAMGPU_EXECUTOR pointing at a
//     -tags cuda build);
//   - the launcher, through the pipelines' own binaries: Dataflow plans of
//     both pipelines with right fitting and with whole-pipeline GPU, every
//     invalid GPU configuration refused before anything runs, no
//     credentials in a plan, and the right-fitted Landsat pipeline run on
//     prism with two environments and outputs equal to the CPU run's;
//   - the GKE flex-start manifests, generated and parsed back with the
//     Kubernetes types;
//   - the worker container's Dockerfile, parsed with BuildKit's parser.
package integration
