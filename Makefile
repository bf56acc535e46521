# beamgpu: the two commands of the README are `make run` and `make test`.
GO ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 30s
FUZZMINTIME ?= 5s
BENCHTIME ?= 2s

.PHONY: help test-cuda run run-fashion train test test-slow test-large soak lint vet fmt-check staticcheck bench fuzz clean executor cuda-check vet-cuda gpu-test gpu-bench gpu-bench-peer ci plan rehearse dataflow k8s worker image image-push ptx ptx-check

# Launch settings of `make plan` and `make dataflow`.
PIPELINES ?= landsat fashion
PIPELINE ?= landsat
IMAGE ?= beamgpu-worker:dev
DOCKER ?= docker
REGION ?= us-central1
PLAN_DIR ?= out/plan
# The image a plan names: IMAGE where it is a registry path, else a placeholder one
# (a local tag such as beamgpu-worker:dev is not an image Dataflow's workers can pull).
PLAN_IMAGE ?= $(if $(findstring /,$(IMAGE)),$(IMAGE),$(REGION)-docker.pkg.dev/my-project/beamgpu/worker:dev)
# ARGS are passed to the pipeline, split at blanks only: ';' and other shell characters
# in values are kept, e.g. ARGS='--worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:5xx --worker_machine_type=g2-standard-8'
ARGS ?=
export ARGS

# The example module (examples/clipstep), a module of its own: lint checks it too.
EXAMPLE ?= examples/clipstep

# The executor of the worker image (make image, make worker) and of the rehearsal (make
# rehearse): its main package directory; empty is the project's ./pipelines/beamgpu-executor.
# A module's own executor, e.g. EXECUTOR=./examples/clipstep/cmd/clip-executor, serves its ops.
EXECUTOR ?=
# The ops the image's executor serves, as make image wrote them: plans and submissions
# check the GPU steps against them (--executor_ops).
EXECUTOR_OPS ?= $(wildcard out/image/executor-ops.txt)

## help: list the targets with what each does
help:
	@awk -F': ' '/^## [a-z0-9-]+: / { sub(/^## /, ""); name = $$1; sub(/^[^:]*: /, ""); printf "  %-15s %s\n", name, $$0 }' $(MAKEFILE_LIST)

## run: the Landsat pipeline on the embedded scene, on prism (outputs in out/landsat)
run:
	$(GO) run ./pipelines/landsat

## run-fashion: the Fashion-MNIST pipeline on the embedded test set with the shipped MLP
run-fashion:
	$(GO) run ./pipelines/fashion

## train: train the Fashion-MNIST MLP (needs the training set: apt-get install dataset-fashion-mnist)
train:
	$(GO) run ./pipelines/fashion/train --checkpoint_dir=out/fashion-ckpt --out=out/mlp-784-256-128-10.bgmlp

# go test's limit per package (its own default, 10 minutes, is too little on a busy machine:
# a fresh clone's integration package at a load of 8 to 20 on 2 cores ran past it).
TEST_TIMEOUT ?= 60m

## test: every test but the slow checks, with the real Beam runner (prism); then the lint checks
test:
	td=$${BEAMGPU_ONNX_TESTDATA:-$$(containers/debian-fetch.sh --quiet --path usr/share/libonnx-testdata/data libonnx-testdata)} && BEAMGPU_ONNX_TESTDATA=$$td $(GO) test -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) lint

## test-slow: the slow checks make test leaves out (CI runs both): the example module as documented, the rehearsals (minutes)
# The integration package with -slow: the example module copied outside the checkout, vetted,
# tested, run and planned as docs/writing-a-step.md says; the rehearsals of the Dataflow workers
# (the worker image's layout, static pipeline binaries, a worker built from source); the plan
# against the image's full op list (a build of the executor with tags of its own).
test-slow:
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./integration/ -slow

## test-large: the full-size Landsat tests and the full-scene benchmark (about 2 minutes on 2 cores)
# A 7791x7941 scene, tiled and stripped, and four at once: outputs against the formulas, peak
# RSS under 2 GB and 4 GB; then the full-scene benchmark (megapixels per second, ratios to a
# plain read and to a decode-only pass).
test-large:
	@mkdir -p out
	@$(GO) test -tags large -timeout 60m -run 'FullSize' -bench 'FullScene' -benchtime 1x -v ./pipelines/landsat/ > out/test-large.txt 2>&1; \
		status=$$?; grep -v 'level=' out/test-large.txt | grep -E '^(=== RUN|--- |    |Benchmark|ok|FAIL|PASS)'; exit $$status

## soak: the fault soak: the landsat, fashion and infer pipelines under SOAK_FAULTS (200) injected faults, the invariants checked after each run (minutes)
# Seeded (SOAK_SEED): executor SIGKILL and SIGSTOP, pipeline SIGTERM and SIGINT, a full output disk and a 64 MiB
# /dev/shm (as root: tmpfs mounts), a FIFO and a truncated file among the inputs; for infer, concurrent runs into
# one output, a lying .npy header, a model with huge run-time shapes, SIGINT mid-write (docs/reliability.md);
# prints the figures; fails on a violation.
# make test runs a short version (10 faults).
SOAK_FAULTS ?= 200
SOAK_SEED ?= 20
soak:
	@mkdir -p out
	@$(GO) test -count=1 -timeout 60m -run '^TestFaultSoak$$' -v ./integration/ -soak.faults=$(SOAK_FAULTS) -soak.seed=$(SOAK_SEED) > out/soak.txt 2>&1; \
		status=$$?; sed -n '/^fault soak/,/^violations/p' out/soak.txt | head -20; grep -E '^(--- |FAIL|ok)' out/soak.txt; exit $$status

## lint: gofmt, go vet and staticcheck, of this module and of the example module
lint: fmt-check vet staticcheck

## fmt-check: fail if gofmt would change a file
fmt-check:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## vet: go vet of this module and of the example module
vet:
	$(GO) vet ./...
	cd $(EXAMPLE) && $(GO) vet ./...

## staticcheck: staticcheck of this module and of the example module
staticcheck:
	$(GO) run $(STATICCHECK) ./...
	cd $(EXAMPLE) && $(GO) run $(STATICCHECK) ./...

## executor: the CPU reference executor (serves every GPU op with the steps' CPU code)
executor:
	CGO_ENABLED=0 $(GO) build -o out/bin/beamgpu-executor ./pipelines/beamgpu-executor

## cuda-check: build and vet the -tags cuda packages and run the launch tests, against CUDA 11.8 headers; no GPU needed
# The headers come from Debian's packages (containers/cuda-headers.sh fetches them once).
cuda-check:
	containers/build-cuda.sh

# CUDA_ENV fails with what to run when the CUDA headers are not in CGO_CFLAGS.
CUDA_ENV = @printf '\043include <cuda.h>\n' | $${CC:-cc} $$CGO_CFLAGS -E -x c - >/dev/null 2>&1 || { \
	echo "$@: cuda.h is not in CGO_CFLAGS: load the CUDA environment first:" >&2; \
	echo '  eval "$$(go run ./cmd/beamgpu-ptx -env)"' >&2; \
	echo "(it fetches CUDA 11.8's headers and nvcc from Debian once, into a cache; or run make cuda-check, which does it itself)" >&2; exit 2; }
CUDA_PKGS = ./runtime/executor/cuda/... ./transforms/... ./pipelines/beamgpu-executor

## vet-cuda: go vet -tags cuda of the cuda packages (needs the CUDA environment; says how to load it)
vet-cuda:
	$(CUDA_ENV)
	CGO_ENABLED=1 $(GO) vet -tags cuda $(CUDA_PKGS)

## test-cuda: the launch tests of the step families with -tags cuda (no GPU; needs the CUDA environment)
test-cuda:
	$(CUDA_ENV)
	CGO_ENABLED=1 $(GO) test -tags cuda -run Launch ./transforms/raster/ ./transforms/tensor/ ./transforms/onnx/onnxstep/

## ptx: regenerate every committed kernels.ptx from its kernels.cu (cmd/beamgpu-ptx; fetches nvcc once)
ptx:
	$(GO) run ./cmd/beamgpu-ptx
	cd $(EXAMPLE) && $(GO) tool beamgpu-ptx

## ptx-check: fail if a committed kernels.ptx is not what its kernels.cu compiles to; assemble each with ptxas
ptx-check:
	$(GO) run ./cmd/beamgpu-ptx -check
	cd $(EXAMPLE) && $(GO) tool beamgpu-ptx -check

## gpu-test: on a GPU machine: the CUDA executor's selftest, the device tests, every step against the CUDA executor
# Builds the CUDA executor, runs its selftest,
# the device tests and the equivalence tests of every step against it, and every ONNX conformance model on it
gpu-test:
	containers/build-cuda.sh --out out/bin
	out/bin/beamgpu-executor selftest
	eval "$$(containers/cuda-headers.sh)"; CGO_ENABLED=1 CGO_CFLAGS="$$CGO_CFLAGS" CGO_LDFLAGS="$$CGO_LDFLAGS" \
		$(GO) test -tags cuda -count=1 ./runtime/executor/cuda/
	BEAMGPU_EXECUTOR=$(CURDIR)/out/bin/beamgpu-executor $(GO) test -count=1 -v ./integration/
	BEAMGPU_EXECUTOR=$(CURDIR)/out/bin/beamgpu-executor $(GO) test -count=1 -v -run TestExecutorServesOnnxRun ./transforms/onnx/onnxstep/

## gpu-bench: the GPU benchmark (beamgpu-executor bench): ceilings, transport, every GPU step against its floor
# The machine's ceilings, the transport, and every
# GPU step host to host with its ratio to its floor. Where nvidia-smi finds a GPU: the CUDA executor at
# the sizes of the GPU table; elsewhere the reference executor at CI sizes (ratios to memcpy).
# BENCH_ARGS=--phases adds each step's time by phase.
BENCH_ARGS ?=
gpu-bench:
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
		containers/build-cuda.sh --out out/bin && out/bin/beamgpu-executor bench $(BENCH_ARGS); \
	else \
		echo "gpu-bench: no GPU here (nvidia-smi finds none): the CPU reference executor, at CI sizes"; \
		CGO_ENABLED=0 $(GO) build -o out/bin/beamgpu-executor ./pipelines/beamgpu-executor && \
		out/bin/beamgpu-executor bench --size=ci $(BENCH_ARGS); \
	fi

## gpu-bench-peer: PyTorch on the same GPU for the same shapes (containers/gpu/torch_peer.py), and the ONNX models against it
# Where python3
# has PyTorch and a GPU; FASHION_DIR=... adds kNN on the real Fashion-MNIST files
FASHION_DIR ?=
gpu-bench-peer:
	@python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null || \
		{ echo "gpu-bench-peer: needs python3 with PyTorch and a CUDA GPU (none here)" >&2; exit 1; }
	containers/build-cuda.sh --out out/bin
	containers/gpu/onnx_bench.sh out/bin/beamgpu-executor $(FASHION_DIR)

## plan: write a reviewable Dataflow plan of each of PIPELINES, offline, into PLAN_DIR/<pipeline>
# Files:
# plan.txt, plan.json, job.json, pipeline.pb, pipeline.txtpb (right fitting unless ARGS say otherwise)
plan:
	@set -f; for p in $(PIPELINES); do \
		echo "== $$p: $(PLAN_DIR)/$$p"; \
		$(GO) run ./pipelines/$$p --runner=dataflow --region=$(REGION) --sdk_container_image=$(PLAN_IMAGE) \
			$(if $(EXECUTOR_OPS),--executor_ops=$(EXECUTOR_OPS)) --plan_out=$(PLAN_DIR)/$$p --progress=0 $$ARGS || exit 1; \
	done; \
	echo "note: GPU workers need shared memory for the executors' batches (see 'Worker container' in each plan.txt): check df -h /dev/shm on a first worker"

## rehearse: PIPELINE on prism as on Dataflow's workers: a worker process per environment, started by Beam's boot loader
# The worker image's layout under REHEARSE_DIR (containers/build-rehearsal.sh: Beam's boot
# loader built from go.mod's Beam module, the image's entrypoint cmd/beamgpu-boot, the
# reference executor of EXECUTOR, containers/worker.env), then the pipeline with
# --rehearse=REHEARSE_DIR: right fitting on, each environment a PROCESS worker that retrieves
# the pipeline binary through prism's artifact service. No GPU or Docker needed. With
# REHEARSE_IMAGE=IMAGE (a worker image, e.g. from make image) prism runs that image
# instead (DOCKER environments; needs a Docker engine and gs:// paths in ARGS, since the
# containers see no local file; not tested here).
REHEARSE_DIR ?= out/rehearse
REHEARSE_BACKEND ?= gpu
REHEARSE_IMAGE ?=
rehearse:
	CGO_ENABLED=0 $(GO) build -o out/bin/$(PIPELINE)-worker ./pipelines/$(PIPELINE)
	@set -f; if [ -n "$(REHEARSE_IMAGE)" ]; then \
		out/bin/$(PIPELINE)-worker --rehearse=image:$(REHEARSE_IMAGE) --backend=$(REHEARSE_BACKEND) $$ARGS; \
	else \
		containers/build-rehearsal.sh --out $(REHEARSE_DIR) $(if $(EXECUTOR),--executor $(EXECUTOR)) && \
		out/bin/$(PIPELINE)-worker --rehearse=$(REHEARSE_DIR) --backend=$(REHEARSE_BACKEND) $$ARGS; \
	fi

## dataflow: submit PIPELINE to Dataflow with the worker image IMAGE (needs PROJECT and STAGING=gs://...)
# Needs PROJECT, STAGING=gs://...,
# credentials, and inputs and outputs the workers can read: ARGS='--input=... --output=gs://...').
# It builds the pipeline for the workers (linux/amd64, CGO_ENABLED=0) into out/bin/PIPELINE-worker and
# stages that binary (--worker_binary), as a launch from the image stages /opt/beamgpu/bin/PIPELINE.
dataflow:
	@test -n "$(PROJECT)" || { echo "make dataflow: set PROJECT=<Google Cloud project>"; exit 2; }
	@case "$(STAGING)" in gs://*) ;; *) echo "make dataflow: set STAGING=gs://BUCKET/PATH"; exit 2;; esac
	@case "$(IMAGE)" in */*) ;; *) echo "make dataflow: IMAGE=$(IMAGE) names no registry: set IMAGE=REGION-docker.pkg.dev/PROJECT/REPO/beamgpu-worker:TAG (make image-push)" >&2; exit 2;; esac
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -o out/bin/$(PIPELINE)-worker ./pipelines/$(PIPELINE)
	@set -f; $(GO) run ./pipelines/$(PIPELINE) --runner=dataflow --project=$(PROJECT) --region=$(REGION) \
		--staging_location=$(STAGING) --sdk_container_image=$(IMAGE) --worker_binary=out/bin/$(PIPELINE)-worker \
		$(if $(EXECUTOR_OPS),--executor_ops=$(EXECUTOR_OPS)) $$ARGS

## k8s: regenerate the GKE flex-start example manifests in containers/k8s (checked by TestGKEExamplesUpToDate)
k8s:
	$(GO) run ./runtime/gke/cmd/beamgpu-gke --examples=containers/k8s

## worker: the worker image's build steps without Docker, into out/worker
# What the Dockerfile's builder stage runs:
# the CUDA executor and the pure-Go pipeline and trainer binaries, into out/worker
worker:
	containers/build-worker.sh --out out/worker $(if $(EXECUTOR),--executor $(EXECUTOR))

## image: build the worker image IMAGE (default beamgpu-worker:dev) from the root Dockerfile
# Needs a
# Docker engine with BuildKit (without one, `make worker` runs the same build steps).
# EXECUTOR=path/to/main builds the image with that executor (a module's own, here or
# elsewhere: containers/stage-executor.sh copies a module outside this checkout into the
# build context). The ops it serves go into the label org.beamgpu.executor.ops and
# out/image/executor-ops.txt, which make plan and make dataflow pass as --executor_ops.
image:
	@command -v $(DOCKER) >/dev/null 2>&1 || { echo "make image: '$(DOCKER)' not found: install the Docker client (or set DOCKER=podman)" >&2; exit 1; }
	@$(DOCKER) info >/dev/null 2>&1 || { echo "make image: no Docker engine reachable ('$(DOCKER) info' failed: start the daemon or set DOCKER_HOST); without one, make worker runs the image's build steps" >&2; exit 1; }
	@mkdir -p out/image
	containers/executor-ops.sh $(EXECUTOR) > out/image/executor-ops.txt
	@set -e; exe=$$(containers/stage-executor.sh "$(or $(EXECUTOR),./pipelines/beamgpu-executor)"); set -x; \
	DOCKER_BUILDKIT=1 $(DOCKER) build --build-arg EXECUTOR=$$exe \
		--build-arg EXECUTOR_OPS=$$(paste -sd, out/image/executor-ops.txt) -t $(IMAGE) .

## image-push: push IMAGE, built by `make image` with the same IMAGE=REGISTRY/PATH:TAG
# (e.g. us-central1-docker.pkg.dev/PROJECT/REPO/beamgpu-worker:TAG), with registry credentials configured
image-push:
	@case "$(IMAGE)" in */*) ;; *) echo "make image-push: IMAGE=$(IMAGE) names no registry: set IMAGE=REGISTRY/PATH:TAG" >&2; exit 2;; esac
	@command -v $(DOCKER) >/dev/null 2>&1 || { echo "make image-push: '$(DOCKER)' not found: install the Docker client" >&2; exit 1; }
	@$(DOCKER) info >/dev/null 2>&1 || { echo "make image-push: no Docker engine reachable ('$(DOCKER) info' failed: start the daemon or set DOCKER_HOST)" >&2; exit 1; }
	$(DOCKER) push $(IMAGE)

## ci: what .ci/run runs: the tests and the slow checks, then the worker image's build steps and the PTX check (no GPU needed)
ci: test test-slow worker ptx-check

## bench: the benchmarks, each result with its ratio to its ceiling, then the peers (numpy, scikit-learn)
# Then the peers
# in the same run (containers/bench/peers.sh: numpy's matmul, scikit-learn's kNN; installs them as root)
bench:
	@mkdir -p out
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./transforms/... ./pipelines/... 2>/dev/null \
		| grep -E '^(Benchmark|ok|FAIL)' | tee out/bench.txt | awk ' \
		/^Benchmark/ { line = $$1; for (i = 2; i <= NF; i++) if ($$i ~ /^ratio/ || $$i == "GFLOP/s") line = line "  " $$i "=" $$(i-1); print line }'
	GO=$(GO) OUT=out/bench containers/bench/peers.sh

.PHONY: onnx-testdata onnx-proto onnx-proto-check bench-onnx

## bench-onnx: the ONNX runtime against ONNX Runtime on torchvision's models, a BERT-style encoder and single operators
# containers/onnx/bench_onnx.sh: exports the models once with Debian's PyTorch into
# ~/.cache/beamgpu/bench-onnx (python3-torch python3-torchvision python3-onnx), installs ONNX
# Runtime with npm (containers/onnx/ort.sh), then times both sides interleaved (ROUNDS, RUNS) and
# writes out/bench-onnx/table.md: ms, ratio to ORT, GFLOP/s and share of the FMA peak, bytes per run.
# The single operators (containers/onnx/bench_ops.py, onnx.helper) run at one thread into
# out/bench-onnx/ops-table.md: CPU and wall ms per run on each side and their ratios.
# BENCH_ONNX=models or BENCH_ONNX=ops runs one set, BENCH_ONNX="lstm/op resnet50/b1" entries.
bench-onnx:
	GO=$(GO) containers/onnx/bench_onnx.sh $(BENCH_ONNX)

## onnx-testdata: fetch ONNX's conformance data (Debian's libonnx-testdata) and print its directory
# Without root, into ~/.cache/beamgpu/debian (containers/debian-fetch.sh); `make test` does this.
onnx-testdata:
	@containers/debian-fetch.sh --path usr/share/libonnx-testdata/data libonnx-testdata

## onnx-proto: regenerate transforms/onnx/onnxpb/onnx.pb.go from onnx.proto
# With Debian's protoc 3.21 (fetched without root) and protoc-gen-go of go.mod's google.golang.org/protobuf.
onnx-proto:
	@GO=$(GO) containers/onnx/onnx-proto.sh

## onnx-proto-check: fail if the committed onnx.pb.go is not what onnx.proto generates (run by CI)
onnx-proto-check:
	@GO=$(GO) containers/onnx/onnx-proto.sh --check

## fuzz: a short run of every fuzz test (FUZZTIME each), failing at the first finding
# New inputs minimized for at most FUZZMINTIME;
# fails at the first target that fails, with its output (the failing input is in the package's testdata/fuzz).
# A bare "context deadline exceeded" with no failing input is Go's coordinator racing its own
# -fuzztime deadline on a loaded machine (golang/go#75804), not a finding: it is reported, not failed.
fuzz:
	@mkdir -p out
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; \
			if $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) > out/fuzz.log 2>&1; then \
				grep -v 'level=INFO' out/fuzz.log | tail -2; \
			elif grep -q 'context deadline exceeded' out/fuzz.log && ! grep -q 'Failing input written' out/fuzz.log; then \
				echo "   no finding: Go's fuzzing coordinator reported its own deadline (golang/go#75804)"; \
			else \
				grep -v 'level=INFO' out/fuzz.log | tail -40; echo "make fuzz: $$pkg $$f failed"; exit 1; \
			fi; \
		done; \
	done

## clean: remove out/ and .executor/ (a staged executor module)
clean:
	rm -rf out .executor
