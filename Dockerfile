# The beamgpu worker image: the Apache Beam Go SDK boot loader, started by the
# image's entrypoint beamgpu-boot (cmd/beamgpu-boot), which first applies
# containers/worker.env, the worker's environment (the one source of it: a local
# rehearsal of the workers, make rehearse, applies the same file); the CUDA executor
# at the fixed path the executor client looks for (client.DefaultPath); and the
# pure-Go pipeline and trainer binaries, so the same image is a Dataflow worker
# (--sdk_container_image) and a GKE batch job.
#
#   docker build -t beamgpu-worker:dev .        (make image)
#
# Your own executor (a module's steps): EXECUTOR names its main package, a directory
# of the build context (a module of its own is built in that module), and
# EXECUTOR_OPS the ops it serves for the image's label, which make image fills in
# (containers/executor-ops.sh); the image also holds them in
# /opt/beamgpu/executor-ops.txt:
#
#   make image EXECUTOR=./examples/clipstep/cmd/clip-executor IMAGE=...
#
# Every image is pinned to an exact version tag. To pin a digest as well, resolve
# each tag once (`docker buildx imagetools inspect nvidia/cuda:12.4.1-runtime-ubuntu22.04`
# prints `Digest: sha256:...`) and write it after the tag:
#   FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04@sha256:<digest>
# integration/dockerfile_test.go checks the pins, that the Beam image's version is
# the Beam version in go.mod, the entrypoint, and the executor's path.

# Builder: the CUDA 12 toolkit (headers, libcu++, link stubs) and Go, which
# containers/build-worker.sh needs to build the executor with -tags cuda.
FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build
COPY --from=golang:1.26.8-bookworm /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:$PATH \
    GOTOOLCHAIN=local \
    CUDA_HOME=/usr/local/cuda
# cgo needs a C compiler; install one only where the devel image lacks it.
RUN if ! command -v gcc >/dev/null; then \
        apt-get update && \
        apt-get install -y --no-install-recommends gcc libc6-dev && \
        rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod \
    go mod download
COPY . .
# The executor's main package: the project's, or a module's own.
ARG EXECUTOR=./pipelines/beamgpu-executor
RUN --mount=type=cache,target=/root/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    containers/build-worker.sh --out /out --executor "$EXECUTOR"

# Runtime: the matching CUDA 12 runtime (libcublas.so.12 and libcublasLt.so.12 for
# the executor; the driver's libcuda.so.1 comes from the host through the NVIDIA
# container runtime, as on Dataflow and GKE GPU nodes).
FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04
# The GPU ops the executor serves, comma separated (make image passes
# containers/executor-ops.sh's list): a launch checks a job's GPU steps against it.
ARG EXECUTOR_OPS=
LABEL org.beamgpu.executor.ops="${EXECUTOR_OPS}"
# The Beam Go SDK boot loader (and its licenses), of the Beam version in go.mod.
COPY --from=apache/beam_go_sdk:2.77.0 /opt/apache/beam /opt/apache/beam
COPY --from=build /out/beamgpu-executor /opt/beamgpu/bin/beamgpu-executor
COPY --from=build /out/executor-ops.txt /opt/beamgpu/executor-ops.txt
COPY --from=build /out/beamgpu-boot /out/cudaprobe /out/landsat /out/fashion /out/fashion-train /opt/beamgpu/bin/
# The worker's environment (BEAMGPU_EXECUTOR, BEAM_BOOT, PATH): no ENV here, so
# that the image and the rehearsal cannot drift apart.
COPY containers/worker.env /opt/beamgpu/worker.env
# Boot writes the worker binary to /tmp and runs it from there: /tmp stays the
# image's own (mode 1777, not noexec), and the container runs as root, as boot expects.
# beamgpu-boot becomes the boot loader (exec) with the arguments it is given.
ENTRYPOINT ["/opt/beamgpu/bin/beamgpu-boot"]
