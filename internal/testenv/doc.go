// Package testenv runs a real Kubernetes control plane for tests: etcd and
// kube-apiserver v1.37.2 on loopback ports, with real TLS from a CA of its
// own and the flags kubeadm gives kube-apiserver (--authorization-mode=
// Node,RBAC, --enable-admission-plugins=NodeRestriction,
// --allow-privileged=true, --service-cluster-ip-range=10.96.0.0/12,
// --client-ca-file, service-account signing keys). Everything the API
// server enforces — validation, admission (Pod Security, RuntimeClass,
// NodeRestriction, CEL admission policies), RBAC and the Node authorizer,
// CRD schemas, CSR rules — is the real thing. No controllers, scheduler or
// kubelets run: objects stay as they are written, and Load plays the
// controllers' part for status.
//
// # Binaries
//
// kube-apiserver (and kubeadm, kube-controller-manager, kube-scheduler) are
// built from the k8s.io/kubernetes v1.37.2 module by hack/testenv into
// ~/.cache/hybridctl/testenv/v1.37.2/ (see BinDir): run
//
//	hack/testenv/testenv build
//
// once from the repository root. etcd 3.7.0 (what kubeadm v1.37.2 deploys)
// is built the same way from its own module, hack/testenv/etcd. When a binary is missing, tests that need the environment fail
// with a message saying how to build it; under go test -short they are
// skipped.
//
// # One environment per test package
//
//	func TestMain(m *testing.M) {
//		testenv.Main(m, testenv.Options{Calico: true}) // or {Lab: true}: the guide's lab loaded
//	}
//
//	func TestSomething(t *testing.T) {
//		env := testenv.Get(t) // t.Skip under -short; starts on first use
//		ns := env.NewNamespace(t, "something-", nil)
//		cs, _ := kubernetes.NewForConfig(env.AdminConfig())
//		...
//	}
//
// The environment starts on the first Get (about 4 s, plus about 3 s for
// the Calico CRDs) and is stopped when the package's tests end, also on
// SIGINT/SIGTERM. Tests share it and can run in parallel: each works in its
// own namespace (NewNamespace) or with its own object names, and must not
// change cluster-wide objects other tests read. Fixtures that describe a
// whole cluster (LabDir) are loaded by Options.Load, once per package. A
// test that needs a private control plane calls StartT.
//
// # API
//
//	Options{Calico, Lab bool; Load []string; Logf func(string, ...any); APIServerFlags []string; Cache string}
//	Start(ctx, Options) (*Env, error)      start; Stop when done
//	(*Env).Stop() error                    apiserver first, then etcd; idempotent
//	(*Env).AdminConfig() *rest.Config      kubernetes-admin, system:masters
//	(*Env).Client() (*kubernetes.Clientset, error)
//	(*Env).KubeconfigPath() string         admin kubeconfig, mode 0600
//	(*Env).UserConfig(user, groups...)     mints a client certificate
//	(*Env).WriteKubeconfig(path, cfg)      any config as a kubeconfig file
//	(*Env).CAData() []byte; Host() string; Dir() string
//	(*Env).LoadDir / LoadFile / Load       fixtures in dependency order, with status
//	(*Env).NewNamespace / CreateNamespace  a fresh namespace with its default ServiceAccount
//	ReadDir / ReadFile / Parse             fixture documents with file:line
//	Subset(want, got) []string             fixture vs. read-back differences
//	NewRESTMapper(cfg)                     discovery-backed RESTMapper
//	Main(m, Options); Get(t); StartT(t, Options)
//	BinDir, Binary(name), RepoRoot, ThirdPartyDir, ThirdParty, CalicoCRDs, LabDir
//	Run(ctx, args, stdin, stdout, stderr)  hack/testenv/testenv run
//
// No kube-controller-manager runs: the aggregated ClusterRoles (view, edit,
// admin) grant nothing, namespaces get "default" ServiceAccounts only from
// this package, and deletions that need a controller never finish.
//
// Processes are started in their own process group with a parent-death
// signal, so nothing outlives the test binary even when it panics or times
// out; Stop signals the whole group and kills it after a short grace. The
// next Start removes directories left by owners that died.
// Benchmarks that load large fixtures set Options.Cache: the etcd data
// after loading is kept there, keyed by the binaries, the options and the
// fixture files' content, and a later Start with the same key starts etcd
// on a copy of it instead of loading again.
//
// Set HYBRIDCTL_TESTENV_KEEP=1 to keep the temporary directory with the
// logs (etcd.log, kube-apiserver.log) after Stop.
package testenv
