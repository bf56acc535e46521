//go:build !unix

package protocol

import "errors"

var oobSpace = 64

const flagCtrunc = 0

var errNoFDPassing = errors.New("executor: passing file descriptors is not supported on this OS")

func parseRights(oob []byte, flags int) ([]int, error) { return nil, errNoFDPassing }

func rights(fds []int) ([]byte, error) { return nil, errNoFDPassing }

func closeFD(fd int) {}
