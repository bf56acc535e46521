package onnx

// The launch of RNN, GRU and LSTM (ops_rnn.go): no device kernel yet. A
// device plan runs the node on the host inside the run (its inputs come
// down, the CPU code computes, its outputs go up, and the run logs it), so
// a model with recurrent layers runs on the GPU executor with its other
// nodes on the device rather than being refused there.

func (k *recurrent) Launch(*Device, []DevArray, []DevArray) error { return ErrOnHost }
