//go:build unix

package protocol

import (
	"fmt"
	"syscall"
)

// Room for a few descriptors per read; the protocol sends one at a time.
var oobSpace = syscall.CmsgSpace(4 * 4)

const flagCtrunc = syscall.MSG_CTRUNC

func parseRights(oob []byte, flags int) ([]int, error) {
	var fds []int
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("%w: control message: %v", ErrFrame, err)
	}
	for i := range msgs {
		if msgs[i].Header.Level != syscall.SOL_SOCKET || msgs[i].Header.Type != syscall.SCM_RIGHTS {
			continue
		}
		got, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			return fds, fmt.Errorf("%w: SCM_RIGHTS: %v", ErrFrame, err)
		}
		for _, fd := range got {
			syscall.CloseOnExec(fd)
		}
		fds = append(fds, got...)
	}
	if flags&syscall.MSG_CTRUNC != 0 {
		return fds, fmt.Errorf("%w: control message truncated (too many descriptors)", ErrFrame)
	}
	return fds, nil
}

func rights(fds []int) ([]byte, error) { return syscall.UnixRights(fds...), nil }

func closeFD(fd int) { _ = syscall.Close(fd) }
