//go:build linux

// Package pty opens a pseudo-terminal for tests that need a real terminal
// on the other end of a writer (colour, live views): /dev/ptmx and its
// /dev/pts peer, with no external dependency.
package pty

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Terminal is an open pseudo-terminal: TTY is the terminal a program
// writes to; Output returns what reached the other side.
type Terminal struct {
	TTY  *os.File
	ptmx *os.File
	mu   sync.Mutex
	out  []byte
	done chan struct{}
}

// Open opens a pseudo-terminal, closed at the end of the test. Output
// post-processing is turned off, so the bytes written arrive unchanged.
func Open(t testing.TB) *Terminal {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx: %v", err)
	}
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty's terminal: %v", err)
	}
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatalf("termios: %v", err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatalf("termios: %v", err)
	}
	term := &Terminal{TTY: tty, ptmx: ptmx, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.out = append(term.out, buf[:n]...)
			term.mu.Unlock()
			if err != nil {
				return // EIO once the terminal side is closed
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
	})
	return term
}

// Output closes the terminal side and returns everything written to it.
func (p *Terminal) Output() string {
	p.TTY.Close()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.out)
}
