package main

import (
	"os"
	"syscall"
	"time"
)

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }

// unblock opens a FIFO for writing and closes it, releasing a reader
// blocked opening it.
func unblock(path string) {
	if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}

func timeAfter(seconds int) <-chan time.Time { return time.After(time.Duration(seconds) * time.Second) }
