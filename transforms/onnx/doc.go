// Package onnx loads ONNX models and runs them on the CPU, in pure Go, and
// on the GPU executor's device.
//
// Load or Parse reads a model, checks every node against the registered
// operators (RegisterOp; Ops lists them with the opset versions they
// implement), folds its constants and folds each inference-mode
// BatchNormalization that follows a Conv into the Conv's weights and bias
// (graph_fuse.go); Model.Run plans the graph once per
// input shape (Model.Plan: shapes inferred, known values computed, each
// Conv fused with the residual Add and the activation that alone read it,
// each MatMul with its bias Add, residual Add and activation, GELU's five
// operators included, and scaled dot-product attention's five operators
// as one step that never makes the score tensor whole (plan_fuse.go,
// ops_conv_fused.go, ops_matmul_fused.go, ops_attention_fused.go), a QDQ
// model's DequantizeLinear -> Conv or MatMul -> QuantizeLinear layers as
// integer products, as ONNX Runtime runs them (plan_fuse_quant.go,
// ops_quant_gemm.go), the values between convolutions that take the
// blocked kernel kept in its layout of 16-channel blocks, as ONNX
// Runtime's NCHWc layout, changed only where such a chain meets another
// operator (plan_layout.go, ops_conv_nchwc.go; a Transpose to channels
// last after such a convolution is its way of writing, a MaxPool of a
// large output pools it a band of rows at a time in cache; a 3x3 one of
// stride 1 between blocked values is Winograd's F(2x2, 3x3):
// ops_conv_winograd.go), ConvNeXt's
// block end (Transpose, layer scale, residual Add) as one step
// (ops_scale_fused.go), the rest placed in one workspace, where a step
// that adds a residual (Overwriter) may write over it) and runs it. A model with operators outside
// the set is refused at load by one error that names each of them, with
// its first node and the opset (ops_check.go).
//
// Shapes that depend on the data (a detector's NonMaxSuppression, NonZero,
// a TopK whose k the model computes) end a plan at their node: the run
// computes the plan's steps, then that node (a DataShaped kernel's
// RunShaped makes outputs of the shapes it found), and goes on with a plan
// of the rest of the model made for the shapes (and the contents read as
// shapes) it met, kept like the first (plan.go, run.go's handOn).
//
// On the GPU (Plan.RunDevice, gpu.go) the same plan, fused steps
// included (a fused Conv's or MatMul's bias, residual and activation are
// one kernel after its products; the CPU's blocked layout is not the
// device's: there a blocked step launches its Conv on NCHW values and a
// reorder is a copy), runs one step at a
// time as launches of the operators' CUDA kernels and cuBLAS products, the
// model's weights resident on the device, the intermediate values in one
// device workspace at the plan's offsets, one copy up per input and one
// down per output. A node whose types the kernels do not take (float64,
// integer division...) runs on the host, as do the recurrent layers (RNN,
// GRU, LSTM: no device kernel yet) and DynamicQuantizeLinear, and the run
// says so once per plan (a
// log/slog warning). The tests run the conformance suite and the
// exported models through that path without a GPU: a device emulator
// (runtime/executor/gpu/gpuemu) with the kernels compiled for the host
// (internal/kernelemu).
//
// # Control flow
//
// If, Loop and Scan hold graphs in their attributes (subgraph.go): the
// loader builds each as a Model of its own, whose inputs are the ones it
// declares and then the values it reads from the graphs that enclose it
// (outer scope), which the node that holds it reads too; a name no
// enclosing graph defines is refused at load. The kernels (ops_if.go,
// ops_loop.go, ops_scan.go) plan their subgraphs with the runtime's
// planner, a plan per shape kept, and run those plans: an If on a known
// condition is its branch, an If whose branches differ in shape and a
// Loop whose iterations depend on the data are DataShaped. On the GPU
// executor they run on the host. The runtime holds no sequences: a list a
// Loop appends to and the graph stacks after it (SequenceEmpty,
// SequenceInsert, ConcatFromSequence, as PyTorch writes it) is rewritten
// at load into a scan output of the Loop (sequence.go): a sequence is its
// elements stacked (of one shape), which the sequence operators read and
// make (ops_sequence.go).
//
// # Memory
//
// A model does not decide how much memory its process takes. Every buffer
// the runtime allocates for values (a run's workspace, its outputs, the
// values folded at load and while planning, a model file and its external
// data, a device run's host copies) goes through one function (memory.go)
// that checks it against the call's memory budget first: over it, the call
// fails with a *MemoryError naming the node and the bytes (errors.Is
// ErrMemoryBudget) and nothing is allocated. The budget is
// RunOptions.MemoryBudget (Model.RunWith, Plan.RunWith), else
// $BEAMGPU_ONNX_MEMORY_BUDGET (EnvMemoryBudget, "4GiB" as ParseBytes
// reads it), else the memory available to the process when the call starts
// (DefaultMemoryBudget: /proc/meminfo's MemAvailable and the cgroup's
// limit less its usage). A model file's size is checked before it is read
// (MaxModelBytes, protobuf's 2 GiB) and its top-level fields before the
// rest, so that a file of zeros or garbage is refused at once. In time, a
// run is bounded by RunOptions.Context: once it is done the run stops
// before its next step and between a Loop's iterations.
//
// A run allocates nothing of its own after its plan's first (run_into.go):
// the workspace and the steps' lists are the plan's (one set per
// concurrent run, kept through garbage collections, unlike a sync.Pool's;
// a model keeps its plans' idle ones to a bound, idleStates),
// the constant weights of Conv, ConvTranspose, MatMul and Gemm are packed
// for the products once (gemm.Pack, gemm.PackA; a Gemm of one row by a
// transposed B, a classifier at batch 1, reads B as it is, a dot product a
// row: gemvT), the kernels keep what
// they derive from their inputs' shapes for the shapes they last saw
// (byShapes, stridedPlans) and share their work between goroutines kept
// for the process (internal/parallel's ForWith and EachWith: a loop's
// arguments in a pooled box, no closure). Run returns new output arrays;
// Plan.RunInto writes the caller's, and a run into them allocates nothing
// for the kernels this covers (TestRunIntoAllocs: the ResNet-style CNN,
// MobileNetV2 and the transformer at 1, 2 and 4 threads; torchvision's
// models and the BERT-style encoder of make bench-onnx, TestZooRunIntoAllocs).
// Resize, Pow, the unary operators and reductions of other types than
// float32 still allocate a little at each run.
//
// # Files
//
// An operator lives in a pair of files named after it, and its kernels in a
// third: ops_softmax.go registers Softmax and holds its CPU code,
// ops_softmax_gpu.go its Launch and the handles of the kernels it enqueues,
// ops_softmax.cu those kernels. An operator's vector code for amd64 is
// assembly beside it (ops_conv_flat_amd64.s, declared in
// ops_conv_flat_amd64.go; ops_conv_flat_other.go is the Go that runs
// elsewhere), for AVX-512, and for AVX2 with FMA (AMD's EPYC before Zen 4
// has no AVX-512) where written (the shifted-sum and the depthwise
// convolutions, MaxPool, Clip, Relu, HardSigmoid, HardSwish, the blocked
// (NCHWc) convolution, GELU, SiLU, Softmax's and LayerNormalization's rows;
// the dot products of gemvT are AVX-512 only), chosen at
// start from the CPU's features (simd_amd64.go) and each tested against
// its Go loop at every width the CPU runs. The blocked convolution's
// kernels are generated (go run ops_conv_nchwc_gen.go writes
// ops_conv_nchwc_amd64.s and its declarations); prefetch_amd64.s is the
// hint with which it brings the weights of its next group of output
// blocks, or next chunk of input blocks, into L2 while it computes
// (nextWeights). kernels.cu includes every operator's .cu
// file, with the helpers they share in kernels.cuh, and is what nvcc
// compiles to kernels.ptx (`make ptx`, cmd/beamgpu-ptx); kernels.go embeds
// the PTX (PTX, Module). What several operators share has one file each:
// toolkit.go (the exported helpers, below), numeric.go (numeric helpers),
// dtype.go (the element types and the dispatch of a Run to its loop for an
// array's type), util.go (the rest), ops_window.go (the sliding window of
// Conv and the pools), strided.go (strided copies), gpu_util.go and
// gpu_util.cu (what the launches share). The loader, the graph and the
// planner are load.go, proto.go, tensorproto.go, graph.go, graph_fuse.go,
// model.go, plan.go, plan_fuse.go, plan_layout.go and run.go, the registry op.go and attrs.go; the device
// plan is gpu.go, and compare.go holds the device's outputs to the CPU's.
//
// # Writing an operator
//
// An operator is an OpDef registered from an init function (RegisterOp),
// the way image formats register with package image; a program that
// imports the package that registers it gets it. Its New reads a node's
// attributes (Node, Attrs) and returns a Kernel: Infer gives the outputs'
// types and shapes from the inputs' Metas (NeedValue for an input whose
// contents it needs and does not have), Run computes them. A Kernel may
// also be a Viewer (outputs that are views of an input), Nondeterministic
// (never computed ahead of a run) and a Launcher: Launch enqueues its work
// on a Device (DevArray buffers; ErrOnHost for inputs its kernels do not
// take, and the node runs on the host).
//
// For operators written outside this package, these are exported, and
// kept so deliberately: the registry and its types (op.go: RegisterOp,
// OpDef, Ops, Node, Kernel, Meta, NeedValue, Viewer, Nondeterministic,
// DataShaped and ShapeFromData, MinOpset, MaxOpset), Attrs and NewAttrs (attrs.go; NewAttrs builds a
// node's attributes in tests), the device's types (gpu.go: Launcher,
// Device, DevArray, ErrOnHost), and the toolkit of helpers in toolkit.go:
// NormAxis and NormAxes, BroadcastShapes, BroadcastStrides and Strides,
// KnownInts and ValueMetas. The package's own operators use the same. An
// operator outside the package compiles its kernels into a module of its
// own (go tool beamgpu-ptx) and launches them through Device.Call.
// docs/adding-an-operator.md walks through an operator of this package,
// from its registration to its kernel, its launch and its tests.
//
// The package is the runtime alone: it imports no Beam package, nothing of
// the step framework and nothing of the executor but the device API that
// its launches are written against (runtime/executor/gpu). The onnx step,
// the runtime as a beamgpu step with its codecs and its GPU op, is package
// onnxstep; its stub is in stubs/onnx; package inference runs models in
// pipelines.
package onnx
