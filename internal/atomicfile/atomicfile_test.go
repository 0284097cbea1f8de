package atomicfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteCreatesWithModeAndReplaces(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "f")
	if err := Write(ctx, p, []byte("one"), 0o600, Options{}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	if err := Write(ctx, p, []byte("two"), 0o644, Options{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Fatalf("content %q, want two", b)
	}
	assertNoTemps(t, filepath.Dir(p))
}

func TestNoClobberRefusesAndKeepsOld(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Write(ctx, p, []byte("new"), 0o644, Options{NoClobber: true})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("err = %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("content %q, want old", b)
	}
	assertNoTemps(t, filepath.Dir(p))
}

func TestFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "missing-dir", "f")
	if err := Write(context.Background(), p, []byte("x"), 0o600, Options{}); err == nil {
		t.Fatal("want an error for a missing directory")
	}
	assertNoTemps(t, dir)
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := filepath.Join(t.TempDir(), "f")
	if err := Write(ctx, p, []byte("x"), 0o600, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("file written despite canceled context")
	}
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if filepath.Ext(e.Name()) != "" && e.Name()[0] == '.' {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}
