package procedure

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestCheckImageExists against a real registry (distribution's protocol,
// go-containerregistry's in-memory server): the new kube-proxy-windows tag
// present passes; absent refuses the upgrade; a registry that cannot be
// reached is not a refusal (the nodes may reach what this machine cannot).
func TestCheckImageExists(t *testing.T) {
	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	tr := remote.WithTransport(srv.Client().Transport)
	present := host + "/sigwindowstools/kube-proxy:v1.37.2-calico-hostprocess"
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(present)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, tr); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ok, err := checkImageExists(ctx, present, tr); !ok || err != nil {
		t.Errorf("present: reachable %v, %v", ok, err)
	}
	absent := host + "/sigwindowstools/kube-proxy:v1.38.0-calico-hostprocess"
	if ok, err := checkImageExists(ctx, absent, tr); !ok || !errors.Is(err, ErrUpgradeRefused) || !strings.Contains(err.Error(), "is not in its registry") {
		t.Errorf("absent: reachable %v, %v", ok, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	if ok, err := checkImageExists(ctx, closed+"/sigwindowstools/kube-proxy:v1.37.2-calico-hostprocess"); ok || err != nil {
		t.Errorf("unreachable: reachable %v, %v", ok, err)
	}
	if _, err := checkImageExists(ctx, "not a reference!"); !errors.Is(err, ErrUpgradeRefused) {
		t.Errorf("a bad reference: %v", err)
	}
}
