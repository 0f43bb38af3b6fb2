package chaos

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/manager"
)

// leaseArgs make failovers take seconds, as in the HA tests: a replica
// takes over 8s after the leader stopped renewing.
// envtest's CRD installer logs through controller-runtime: without a
// logger set, each run printed a 30-line stack saying none was (as
// testenv.RunWith sets for the other packages).
func init() { ctrllog.SetLogger(logr.Discard()) }

var leaseArgs = []string{"--leader-election-lease-duration=8s", "--leader-election-renew-deadline=5s", "--leader-election-retry-period=1s"}

const leaseDuration = 8 * time.Second

// env is one run's cluster and everything running next to it.
type env struct {
	t        *testing.T
	cfg      config
	c        *cluster.Cluster
	client   kubernetes.Interface
	k8s      ctrlclient.Client
	etcd     *clientv3.Client // the cluster's
	reg      *clientv3.Client // the registry's
	proxy    *cluster.DelayProxy
	managers [2]*cluster.Lifeline
	replicas *cluster.Replicas
	registry *cluster.Registry
	bridge   *cluster.Bridge
	rec      Recorder
	audit    string
	ns       string

	// procs serializes what starts, stops and signals processes: the
	// faults and the supervisor.
	procs sync.Mutex
	// registryStopped is set, under procs, while the stop-registry fault
	// holds the registry down: a bridge cannot start then, so the
	// supervisor waits for the registry rather than holding procs for
	// minutes on a start that must fail (that kept the fault from starting
	// the registry again: CI on 11-27, seed 785501).
	registryStopped bool
	// mu guards what the goroutines report.
	mu       sync.Mutex
	pauses   []Pause
	faults   []string
	restarts int
	webhook  webhookCounts
	began    time.Time
	// evictions counts the answers to the run's evictions.
	evictions struct{ admitted, refused, failed int }
}

// start brings the cluster up as make dev does, with two manager replicas
// behind a balancer that reach the API server through a delaying proxy,
// an etcd registry and the bridge, and starts recording.
func start(t *testing.T, cfg config) *env {
	ctx, cancel := context.WithCancel(context.Background())
	dir, err := os.MkdirTemp("", "lifeline-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, cfg: cfg, audit: filepath.Join(dir, "audit.log")}
	e.c, err = cluster.Start(ctx, cluster.Options{Dir: dir, Nodes: cfg.nodes, RealNodes: int(cfg.realNodes), AuditLog: e.audit, Progress: os.Stderr})
	if err != nil {
		t.Fatalf("starting the cluster: %v (logs in %s/logs)", err, dir)
	}
	t.Cleanup(func() {
		e.procs.Lock()
		e.c.Stop()
		e.procs.Unlock()
		if t.Failed() || os.Getenv("LIFELINE_E2E_KEEP_LOGS") != "" {
			t.Logf("component logs kept in %s/logs", dir)
			return
		}
		os.RemoveAll(dir)
	})
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(e.c.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	cfgCopy := rest.CopyConfig(e.c.Config)
	cfgCopy.QPS, cfgCopy.Burst = 200, 400
	e.client = kubernetes.NewForConfigOrDie(cfgCopy)
	if e.k8s, err = ctrlclient.New(cfgCopy, ctrlclient.Options{Scheme: manager.Scheme()}); err != nil {
		t.Fatal(err)
	}
	api, err := url.Parse(e.c.Server())
	if err != nil {
		t.Fatal(err)
	}
	if e.proxy, err = cluster.StartDelayProxy(api.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.proxy.Close() })
	e.c.Supervise("lifeline-manager", "lifeline-manager-2", "lifeline-bridge")
	first, err := e.c.StartLifeline(ctx, cluster.LifelineOptions{Root: root, Dir: dir, QPS: 50, Server: "https://" + e.proxy.Addr, Args: leaseArgs})
	if err != nil {
		t.Fatal(err)
	}
	if e.replicas, err = e.c.StartReplica(ctx, first); err != nil {
		t.Fatal(err)
	}
	e.managers = [2]*cluster.Lifeline{first, e.replicas.Second}
	t.Cleanup(func() {
		e.procs.Lock()
		defer e.procs.Unlock()
		_ = e.replicas.Stop(context.Background(), e.c) // its balancer lives in this process
	})
	e.ns = e.namespace(ctx)
	if e.registry, err = e.c.StartEtcdRegistry(ctx, "registry"); err != nil {
		t.Fatal(err)
	}
	// A registry that dies outside its fault is started again and the
	// run goes on, with the death in the log, rather than leaving every
	// later step to wait out its deadline.
	e.c.Supervise(e.registry.Name)
	bridgeConfig := filepath.Join(dir, "bridge.yaml")
	if err := os.WriteFile(bridgeConfig, []byte(fmt.Sprintf("name: chaos\nnamespace: %s\nworkloads: [{kind: CloneSet, selector: {matchLabels: {registry: chaos}}}]\n"+
		"port: 8080\ntimeout: 3s\nresync: 2s\netcd: {endpoints: [%q], prefix: /services, ttl: 5s}\n", e.ns, e.registry.Endpoint)), 0o644); err != nil {
		t.Fatal(err)
	}
	if e.bridge, err = e.c.StartBridge(ctx, cluster.BridgeOptions{Root: root, Dir: dir, Config: bridgeConfig}); err != nil {
		t.Fatal(err)
	}
	e.etcd, e.reg = e.etcdClient(e.c.EtcdURL), e.etcdClient(e.registry.Endpoint)
	t.Cleanup(cancel) // the recorder's watches end before their clients close
	if err := e.rec.WatchPods(ctx, e.etcd, e.ns); err != nil {
		t.Fatal(err)
	}
	if err := e.rec.WatchRecords(ctx, e.etcd, e.ns); err != nil {
		t.Fatal(err)
	}
	if err := e.rec.WatchRegistry(ctx, e.reg, "/services/"); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) etcdClient(endpoint string) *clientv3.Client {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

func (e *env) namespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "chaos"}}
	if _, err := e.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if err := cluster.WaitForServiceAccount(ctx, e.client, ns.Name); err != nil {
		e.t.Fatal(err)
	}
	return ns.Name
}

// begin starts the run: its clock, and the supervisor, which stops at
// cancel or when the test ends, before the cluster's own clean-up.
func (e *env) begin(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go e.supervise(ctx)
	e.mu.Lock()
	e.began = time.Now()
	e.mu.Unlock()
	return ctx, cancel
}

// supervise starts again, as a kubelet would, every manager replica and
// the bridge that exited (a leader that lost its lease exits), and the
// registry, whose exit outside its fault is an error, until ctx ends. It
// holds procs while it restarts one, up to restart's 3 minutes: a fault
// waits for the cluster to be whole again rather than striking a process
// that is half started.
func (e *env) supervise(ctx context.Context) {
	for ctx.Err() == nil {
		e.procs.Lock()
		for _, m := range e.managers {
			if exited, _ := e.c.WaitExit(m.Name, 0); exited {
				e.logf("supervisor: %s exited; starting it again", m.Name)
				e.restart(ctx, m.Name, func() error { return e.c.StartLifelineAgain(ctx, m) })
			}
		}
		if !e.registryStopped { // asked after: WaitExit forgets a process it reports exited
			e.restartBridgeOrRegistry(ctx)
		}
		e.procs.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// restartBridgeOrRegistry is the supervisor's turn for the bridge and its
// registry.
func (e *env) restartBridgeOrRegistry(ctx context.Context) {
	if exited, _ := e.c.WaitExit(e.bridge.Name, 0); exited {
		e.logf("supervisor: %s exited; starting it again", e.bridge.Name)
		e.restart(ctx, e.bridge.Name, func() error { return e.c.StartBridgeAgain(ctx, e.bridge) })
	}
	if exited, _ := e.c.WaitExit(e.registry.Name, 0); exited {
		e.t.Errorf("the registry exited by itself; its log ends: %s", e.logTail(e.registry.Name))
		e.restart(ctx, e.registry.Name, func() error { return e.c.StartRegistryAgain(ctx, e.registry) })
	}
}

// restart runs start until it succeeds (a start can fail while the API
// server is away), as a kubelet's restarts back off and retry.
func (e *env) restart(ctx context.Context, name string, start func() error) {
	if err := e.startAgain(ctx, name, start); err != nil && ctx.Err() == nil {
		e.t.Errorf("%s did not start again: %v", name, err)
	}
	e.mu.Lock()
	e.restarts++
	e.mu.Unlock()
}

// startAgain runs start until it succeeds, for up to 3 minutes, and
// returns the last failure with the end of the component's log.
func (e *env) startAgain(ctx context.Context, name string, start func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		if last = start(); last != nil {
			last = fmt.Errorf("%w; its log ends: %s", last, e.logTail(name))
			e.logf("starting %s: %v", name, last)
			_ = e.c.StopProcess(name, syscall.SIGKILL)
		}
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%v (%w)", last, err)
	}
	return nil
}

// logTail is the last lines of a component's log, on one line.
func (e *env) logTail(name string) string {
	b, _ := os.ReadFile(e.c.LogFile(name))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], " | ")
}

func (e *env) logf(format string, args ...any) {
	e.t.Helper()
	e.t.Logf("%7.1fs "+format, append([]any{time.Since(e.startedAt()).Seconds()}, args...)...)
}
