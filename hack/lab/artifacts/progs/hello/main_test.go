package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestNetexec: hello serves on the port agnhost's netexec arguments name,
// and refuses arguments it does not know.
func TestNetexec(t *testing.T) {
	for _, args := range [][]string{{"netexec", "--http-port=0"}, {"netexec", "--http-port=65536"}, {"netexec", "--port=8080"}, {"netexec", "a", "b"}} {
		var u usage
		if err := run(context.Background(), args, io.Discard); !errors.As(err, &u) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"netexec", "--http-port=" + strconv.Itoa(port)}, io.Discard) }()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s", url, resp.Status)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve after cancel: %v", err)
	}
}
