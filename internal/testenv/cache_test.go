package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCacheRestoresLoadedObjects starts an environment with a fixture and
// a cache (a miss: the fixture is loaded and the data saved), then again
// (a hit: the object is there without loading), then with the fixture
// changed (a miss again: the old object is absent, the new one present).
func TestCacheRestoresLoadedObjects(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	fixtures := t.TempDir()
	write := func(name string) {
		t.Helper()
		doc := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: default\ndata:\n  a: b\n", name)
		if err := os.WriteFile(filepath.Join(fixtures, "cm.yaml"), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	start := func(want bool) *Env {
		t.Helper()
		env, log := startLog(t, Options{Load: []string{fixtures}, Cache: cache})
		if got := strings.Contains(log, "(found: true)"); got != want {
			t.Fatalf("cache entry found: %t, want %t; log:\n%s", got, want, log)
		}
		if loaded := strings.Contains(log, "testenv: loaded "+fixtures); loaded == want {
			t.Fatalf("fixtures loaded: %t with the cache entry found: %t; log:\n%s", loaded, want, log)
		}
		return env
	}
	get := func(env *Env, name string) error {
		t.Helper()
		cs, err := env.Client()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err = cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		return err
	}

	write("first")
	env := start(false)
	if err := get(env, "first"); err != nil {
		t.Fatalf("after loading: %v", err)
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "*", "etcd", "member"))
	if len(entries) != 1 {
		t.Fatalf("cache holds %d entries, want 1: %v", len(entries), entries)
	}

	env = start(true)
	if err := get(env, "first"); err != nil {
		t.Fatalf("restored from the cache: %v", err)
	}
	// The copy is the environment's own: a write does not reach the entry.
	cs, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps("default").Delete(context.Background(), "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	env = start(true)
	if err := get(env, "first"); err != nil {
		t.Fatalf("restored a second time: %v", err)
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}

	write("second")
	env = start(false)
	if err := get(env, "second"); err != nil {
		t.Fatalf("changed fixture: %v", err)
	}
	if err := get(env, "first"); !apierrors.IsNotFound(err) {
		t.Fatalf("changed fixture: the old entry's object is there (err %v)", err)
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}

	// A damaged entry (etcd cannot start on it) is dropped and the
	// fixtures are loaded instead.
	dbs, _ := filepath.Glob(filepath.Join(cache, "*", "etcd", "member", "snap", "db"))
	if len(dbs) != 2 {
		t.Fatalf("want 2 cached databases, have %v", dbs)
	}
	for _, db := range dbs {
		if err := os.WriteFile(db, []byte("not a bbolt database"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env, log := startLog(t, Options{Load: []string{fixtures}, Cache: cache})
	if !strings.Contains(log, "failed, loading instead") || !strings.Contains(log, "testenv: loaded "+fixtures) {
		t.Fatalf("a damaged entry was not replaced by loading; log:\n%s", log)
	}
	if err := get(env, "second"); err != nil {
		t.Fatalf("after a damaged entry: %v", err)
	}
}

// startLog is StartT that also returns the progress lines.
func startLog(t *testing.T, opts Options) (*Env, string) {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	opts.Logf = func(f string, a ...any) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf(f, a...))
		mu.Unlock()
		t.Logf(f, a...)
	}
	env := StartT(t, opts)
	mu.Lock()
	defer mu.Unlock()
	return env, strings.Join(lines, "\n")
}

func TestPruneCacheKeepsTheNewest(t *testing.T) {
	cache := t.TempDir()
	now := time.Now()
	for i, name := range []string{"a", "b", "c", ".tmp-old", ".tmp-new"} {
		d := filepath.Join(cache, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		age := time.Duration(i) * time.Minute // a newest, c oldest
		if name == ".tmp-old" {
			age = 25 * time.Hour
		}
		if err := os.Chtimes(d, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cache, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := pruneCache(cache, 2); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if want := ".tmp-new a b file"; strings.Join(got, " ") != want {
		t.Fatalf("after pruning: %q, want %q", strings.Join(got, " "), want)
	}
}

func TestCacheKeyFollowsContent(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("x"), 0o700); err != nil {
		t.Fatal(err)
	}
	fx := filepath.Join(dir, "fx")
	if err := os.MkdirAll(filepath.Join(fx, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(fx, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	key := func(opts Options) string {
		t.Helper()
		k, err := cacheKey(opts, bin, bin, "", []string{fx})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write("a.yaml", "one")
	write("sub/b.yaml", "two")
	k0 := key(Options{})
	if key(Options{}) != k0 {
		t.Fatal("same input, different keys")
	}
	for name, change := range map[string]func() Options{
		"content": func() Options { write("a.yaml", "One"); return Options{} },
		"file name": func() Options {
			_ = os.Rename(filepath.Join(fx, "a.yaml"), filepath.Join(fx, "c.yaml"))
			return Options{}
		},
		"new file": func() Options { write("sub/c.yaml", ""); return Options{} },
		"flags":    func() Options { return Options{APIServerFlags: []string{"--feature-gates=WatchList=false"}} },
	} {
		t.Run(name, func(t *testing.T) {
			write("a.yaml", "one")
			_ = os.Remove(filepath.Join(fx, "c.yaml"))
			_ = os.Remove(filepath.Join(fx, "sub", "c.yaml"))
			if key(Options{}) != k0 {
				t.Fatal("reset failed")
			}
			if key(change()) == k0 {
				t.Fatalf("the key did not change with the %s", name)
			}
		})
	}
}
