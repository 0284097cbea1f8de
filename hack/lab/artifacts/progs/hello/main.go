// Command hello is the lab's Linux check workload (render's hello
// Deployment) and the client the end-to-end test runs inside pods:
//
//	hello                 serve HTTP on :8080 (PORT overrides): / answers
//	                      "hello from HOSTNAME", /healthz and /readyz "ok"
//	hello netexec [--http-port=N]
//	                      the same on port N, with the arguments of agnhost's
//	                      server (render's check workloads pass them)
//	hello get URL         GET URL (10 s deadline), print the body; exit 1
//	                      unless the status is 2xx
//	hello lookup NAME     resolve NAME, print one address a line
//	hello sleep           wait for SIGTERM (a pod to exec into)
//	hello poll URL        GET URL every second (2 s deadline each) until
//	                      SIGTERM; one line a request: UNIX-SECONDS ok, or
//	                      UNIX-SECONDS fail REASON (an upgrade's client)
//
// Static (CGO_ENABLED=0, pure-Go resolver), so the image needs no libc.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	var u usage
	switch {
	case err == nil:
	case errors.As(err, &u):
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

type usage string

func (u usage) Error() string { return string(u) }

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return serve(ctx, os.Getenv("PORT"))
	}
	switch {
	case args[0] == "netexec" && len(args) <= 2:
		port := ""
		if len(args) == 2 {
			p, ok := strings.CutPrefix(args[1], "--http-port=")
			if n, err := strconv.Atoi(p); !ok || err != nil || n < 1 || n > 65535 {
				return usage("usage: hello netexec [--http-port=1-65535]")
			}
			port = p
		}
		return serve(ctx, port)
	case args[0] == "get" && len(args) == 2:
		return get(ctx, args[1], out)
	case args[0] == "lookup" && len(args) == 2:
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupHost(ctx, args[1])
		if err != nil {
			return fmt.Errorf("lookup %s: %w", args[1], err)
		}
		for _, a := range addrs {
			fmt.Fprintln(out, a)
		}
		return nil
	case args[0] == "sleep" && len(args) == 1:
		<-ctx.Done()
		return nil
	case args[0] == "poll" && len(args) == 2:
		return poll(ctx, args[1], out)
	}
	return usage("usage: hello [netexec [--http-port=N] | get URL | lookup NAME | sleep | poll URL]")
}

func get(ctx context.Context, url string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usage(err.Error())
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(out, io.LimitReader(resp.Body, 1<<20)); err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("get %s: %s", url, resp.Status)
	}
	return nil
}

func poll(ctx context.Context, url string, out io.Writer) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		status := "ok"
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				err = errors.New(resp.Status)
			}
		}
		if err != nil {
			status = "fail " + err.Error()
		}
		fmt.Fprintf(out, "%d %s\n", time.Now().Unix(), status)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func serve(ctx context.Context, port string) error {
	if port == "" {
		port = "8080"
	}
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "hello from %s\n", host) })
	for _, p := range []string{"/healthz", "/readyz"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	}
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve :%s: %w", port, err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}
