// Package onnxpb holds the protobuf types of ONNX's model format, generated
// by protoc-gen-go from onnx.proto as ONNX 1.12.0 publishes it
// (https://github.com/onnx/onnx/blob/v1.12.0/onnx/onnx.proto, Apache-2.0;
// the copy here is the one Debian bookworm's python3-onnx 1.12.0 installs).
// Do not edit onnx.pb.go: `make onnx-proto` regenerates it and `make
// onnx-proto-check` (run by CI) fails when it differs from what onnx.proto
// generates.
package onnxpb
