package kubeconfig

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

// addContext is a mutate that adds a context named name.
func addContext(name string) func(*api.Config) (bool, error) {
	return func(cfg *api.Config) (bool, error) {
		cfg.Contexts[name] = &api.Context{Cluster: "c", AuthInfo: "u"}
		return true, nil
	}
}

// TestBackupNames: backups taken at the same instant get -1, -2, ... after
// the time stamp; each is 0600 and holds the file as it was before that
// write.
func TestBackupNames(t *testing.T) {
	st := newStore(t)
	st.Now = func() time.Time { return time.Date(2026, 12, 2, 15, 4, 5, 6, time.FixedZone("x", 3600)) }
	kt.WriteFile(t, st.Path, []byte("apiVersion: v1\nkind: Config\n"), 0o600)
	base := st.Path + ".hybridctl-backup-20261202T140405.000000006Z"
	var contents [][]byte
	for i, want := range []string{base, base + "-1", base + "-2"} {
		contents = append(contents, mustRead(t, st.Path))
		res, err := st.Update(context.Background(), addContext(string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		if res.Backup != want || !res.Written || res.Created {
			t.Errorf("write %d: %+v, want backup %s", i, res, want)
		}
	}
	got, err := st.ListBackups()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{base, base + "-1", base + "-2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("backups %v, want %v", got, want)
	}
	for i, b := range got {
		assertMode(t, b, 0o600)
		if !bytes.Equal(mustRead(t, b), contents[i]) {
			t.Errorf("%s does not hold the file before write %d", b, i)
		}
	}
}

// TestNoBackups: a negative Backups keeps none and prunes none (backups
// taken earlier stay); an empty existing file is not "created" and is
// backed up.
func TestNoBackups(t *testing.T) {
	st := newStore(t)
	kt.WriteFile(t, st.Path, nil, 0o600)
	res, err := st.Update(context.Background(), addContext("a"))
	if err != nil || res.Created || res.Backup == "" || len(mustRead(t, res.Backup)) != 0 {
		t.Fatalf("empty file: %+v %v", res, err)
	}
	for i := range 7 {
		kt.WriteFile(t, st.Path+backupInfix+"2020010"+string(rune('1'+i))+"T000000.000000000Z", []byte("old"), 0o600)
	}
	st.Backups = -1
	res, err = st.Update(context.Background(), addContext("b"))
	if err != nil || res.Backup != "" || !res.Written {
		t.Fatalf("Backups -1: %+v %v", res, err)
	}
	if bs, _ := st.ListBackups(); len(bs) != 8 {
		t.Errorf("Backups -1 changed the backups: %d left, want 8", len(bs))
	}
	// Backups 1 keeps the newest one only.
	st.Backups = 1
	res, err = st.Update(context.Background(), addContext("c"))
	if err != nil {
		t.Fatal(err)
	}
	if bs, _ := st.ListBackups(); !reflect.DeepEqual(bs, []string{res.Backup}) {
		t.Errorf("Backups 1: %v, want only %s", bs, res.Backup)
	}
}

// TestReadCancelled: Read checks the context first.
func TestReadCancelled(t *testing.T) {
	st := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Read(ctx); KindOf(err) != KindIO || err.Error() != "kubeconfig "+st.Path+": context canceled" {
		t.Errorf("got %v", err)
	}
	if cfg, err := st.Read(context.Background()); err != nil || len(cfg.Contexts) != 0 {
		t.Errorf("missing file: %v %v", cfg, err)
	}
}

// TestLockTimeouts: the lock wait lasts LockTimeout, 30 s when it is zero,
// and the message says how long it waited, for both locks.
func TestLockTimeouts(t *testing.T) {
	st := newStore(t)
	if err := os.MkdirAll(filepath.Dir(st.Path), 0o700); err != nil {
		t.Fatal(err)
	}
	noop := func(*api.Config) (bool, error) { t.Error("mutate ran without the lock"); return false, nil }

	// kubectl's lock file.
	kt.WriteFile(t, st.Path+".lock", nil, 0o600)
	st.LockTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err := st.Update(context.Background(), noop)
	if KindOf(err) != KindIO || !strings.Contains(err.Error(), "waited 300ms;") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("kubectl lock, 300ms: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("waited %s for a 300ms timeout", d)
	}
	st.LockTimeout = 0
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = st.Update(ctx, noop)
	cancel()
	if KindOf(err) != KindIO || !strings.Contains(err.Error(), "waited 30s;") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("kubectl lock, no timeout set: %v", err)
	}
	if err := os.Remove(st.Path + ".lock"); err != nil {
		t.Fatal(err)
	}

	// hybridctl's own lock, held by another writer.
	release, err := st.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	other := &Store{Path: st.Path, LockTimeout: 300 * time.Millisecond}
	_, err = other.Update(context.Background(), noop)
	if KindOf(err) != KindIO || err.Error() != "locking kubeconfig "+st.Path+" (another hybridctl is writing it; waited 300ms): context deadline exceeded" {
		t.Errorf("flock, 300ms: %v", err)
	}
	other.LockTimeout = 0
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := other.Update(ctx, noop); KindOf(err) != KindIO || !strings.Contains(err.Error(), "waited 30s)") {
		t.Errorf("flock, no timeout set: %v", err)
	}
}

// TestPollBacksOff: poll tries at once, stops at the first success or
// error, and between failures waits 2 ms doubling up to 64 ms: in 500 ms
// about ten tries (fewer on a loaded machine), never hundreds.
func TestPollBacksOff(t *testing.T) {
	n := 0
	if err := poll(context.Background(), func() (bool, error) { n++; return true, nil }); err != nil || n != 1 {
		t.Errorf("success at once: %d tries, %v", n, err)
	}
	boom := errors.New("boom")
	n = 0
	if err := poll(context.Background(), func() (bool, error) { n++; return n == 3, map[bool]error{true: boom}[n == 2] }); err != boom || n != 2 {
		t.Errorf("error on the second try: %d tries, %v", n, err)
	}
	n = 0
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := poll(ctx, func() (bool, error) { n++; return false, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v", err)
	}
	if n < 3 || n > 40 {
		t.Errorf("%d tries in %s; want about 10 (2, 4, ... 64 ms apart)", n, time.Since(start))
	}
}

// TestStoreRefusesPlantedLinks: a link planted where the store puts its
// lock files or a backup (names it makes itself, beside the kubeconfig)
// is never opened or written through: a lock link fails the update naming
// it, a backup link is passed over for the next free name; the link's
// target keeps its content.
func TestStoreRefusesPlantedLinks(t *testing.T) {
	for _, suffix := range []string{lockSuffix, ".lock"} {
		st := newStore(t)
		kt.WriteFile(t, st.Path, []byte("apiVersion: v1\nkind: Config\n"), 0o600)
		victim := filepath.Join(t.TempDir(), "victim")
		kt.WriteFile(t, victim, []byte("keep"), 0o644)
		if err := os.Symlink(victim, st.Path+suffix); err != nil {
			t.Fatal(err)
		}
		st.LockTimeout = 200 * time.Millisecond
		_, err := st.Update(context.Background(), addContext("a"))
		if suffix == lockSuffix && (err == nil || !strings.Contains(err.Error(), "refusing to write through "+st.Path+suffix)) {
			t.Errorf("%s: %v", suffix, err)
		}
		if suffix == ".lock" && err == nil {
			t.Errorf("%s: a planted kubectl lock link was taken as free", suffix)
		}
		if b := mustRead(t, victim); string(b) != "keep" {
			t.Errorf("%s: the link's target became %q", suffix, b)
		}
	}
	st := newStore(t)
	st.Now = func() time.Time { return time.Date(2026, 12, 2, 15, 4, 5, 6, time.UTC) }
	kt.WriteFile(t, st.Path, []byte("apiVersion: v1\nkind: Config\n"), 0o600)
	victim := filepath.Join(t.TempDir(), "victim")
	base := st.Path + ".hybridctl-backup-20261202T150405.000000006Z"
	if err := os.Symlink(victim, base); err != nil {
		t.Fatal(err)
	}
	res, err := st.Update(context.Background(), addContext("a"))
	if err != nil || res.Backup != base+"-1" {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := os.Stat(victim); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the backup was written through the link: %v", err)
	}
}
