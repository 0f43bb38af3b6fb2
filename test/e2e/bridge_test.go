package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/bridge"
)

// registered is the label of the seed scenario's hooks: the template puts
// it "false", the bridge turns it "true" once the pod is registered and
// "false" once it is not.
const registered = "example.com/registered"

// TestBridgeKeepsAnEtcdRegistryInStep is the seeds' central scenario on
// the local cluster: a CloneSet with preNormal, inPlaceUpdate and
// preDelete hooks, lifeline-bridge (the shipped binary, under its own
// generated RBAC) and a real etcd as the service registry. Judged by a
// watch of the registry and a watch of the pods, both the test's own: a
// pod is in the registry before it counts as available and only while it
// is Ready, it leaves before its update and before its deletion; a bridge
// restart rewrites nothing; a dead bridge's entries expire and come back
// when it does; a registry outage holds hooks, never releases them.
func TestBridgeKeepsAnEtcdRegistryInStep(t *testing.T) {
	alongside(t)
	ctx := context.Background()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := etcdUnderTest(t, "registry-etcd")
	etcd := r.etcd
	registry := r.registry
	ns := newNamespace(t)
	config := etcdBridgeConfig(t, "registry", "enabled", ns, registry.Endpoint)
	b, err := local.StartBridge(ctx, cluster.BridgeOptions{Root: root, Dir: local.Dir, Config: config})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(b.Name, syscall.SIGTERM) })

	reg := watchRegistry(t, etcd, "/services/")
	watchPodsAgainst(t, ns, r, true)

	cs := newCloneSet(ns, "web", 3)
	cs.Labels = map[string]string{"registry": "enabled"}
	withRegistryHooks(cs)
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "3 pods registered and available", settled(3))
	waitEntries(t, etcd, cs, 3)

	t.Run("an in-place update unregisters each pod first and registers it again after", func(t *testing.T) {
		updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
		waitCloneSet(t, cs, "3 pods updated and available", func(c *appsv1alpha1.CloneSet) bool {
			return settled(3)(c) && c.Status.UpdatedAvailableReplicas == 3
		})
		waitEntries(t, etcd, cs, 3)
		for _, p := range clonePods(t, cs) {
			if got := reg.history(entryKey(ns, p.Name)); !hasSeq(got, "put", "delete", "put") {
				t.Errorf("%s in the registry: %v, want registered, unregistered, registered again", p.Name, got)
			}
		}
	})

	t.Run("a restarted bridge rewrites nothing", func(t *testing.T) {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			before := reg.count()
			if err := local.RestartBridge(ctx, b, sig); err != nil {
				t.Fatal(err)
			}
			eventually(t, time.Minute, "the restarted bridge has reconciled", func(context.Context) (bool, string, error) {
				n := metricAt(b.MetricsURL, "lifeline_bridge_entries", map[string]string{"bridge": "registry"})
				return n == 3, fmt.Sprintf("%v entries", n), nil
			})
			if after := reg.count(); after != before {
				t.Errorf("after a restart (%v) the registry saw %d writes: %v", sig, after-before, reg.since(before))
			}
		}
	})

	t.Run("a dead bridge's entries expire and come back with it", func(t *testing.T) {
		if err := local.StopProcess(b.Name, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "the entries expired with the lease", func(ctx context.Context) (bool, string, error) {
			resp, err := etcd.Get(ctx, "/services/"+ns+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return false, err.Error(), nil
			}
			return resp.Count == 0, fmt.Sprintf("%d entries", resp.Count), nil
		})
		if err := local.StartBridgeAgain(ctx, b); err != nil {
			t.Fatal(err)
		}
		waitEntries(t, etcd, cs, 3)
	})

	t.Run("the entry of a pod deleted behind the hooks' back goes, only it", func(t *testing.T) {
		pods := clonePods(t, cs)
		gone, kept := pods[0], pods[1]
		keptBefore := reg.history(entryKey(ns, kept.Name))
		if err := client.CoreV1().Pods(ns).Delete(ctx, gone.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		waitCloneSet(t, cs, "3 pods available again", settled(3))
		waitEntries(t, etcd, cs, 3)
		if got := reg.history(entryKey(ns, kept.Name)); len(got) != len(keptBefore) {
			t.Errorf("the entry of %s, which stayed, was written: %v", kept.Name, got[len(keptBefore):])
		}
	})

	// Last: with the short TTL of this test, an outage longer than the
	// lease lets etcd expire the entries, which the bridge then restores.
	t.Run("a registry outage holds the hook and flags the pod, never lets it go", func(t *testing.T) {
		if err := local.StopProcess(registry.Name, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](2) })
		var held string
		eventually(t, time.Minute, "a pod held in PreparingDelete, flagged by the bridge", func(ctx context.Context) (bool, string, error) {
			for _, p := range clonePods(t, cs) {
				if p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStatePreparingDelete) {
					continue
				}
				for _, c := range p.Status.Conditions {
					if c.Type == "hook.lifeline.dev/registry" && c.Status == corev1.ConditionFalse && c.Reason == "HandlerTimeout" {
						held = p.Name
						return p.Labels[registered] == "true" && p.DeletionTimestamp == nil, "held and flagged", nil
					}
				}
				return false, "held, not flagged yet", nil
			}
			return false, "no pod in PreparingDelete", nil
		})
		if n := metricAt(b.MetricsURL, "lifeline_hook_handler_failures_total", map[string]string{"operator": "registry", "moment": "BeforeDelete"}); n < 1 {
			t.Errorf("handler failures counted: %v", n)
		}
		if err := local.StartRegistryAgain(ctx, registry); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "the held pod goes once unregistered", func(ctx context.Context) (bool, string, error) {
			_, err := client.CoreV1().Pods(ns).Get(ctx, held, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err), nil
		})
		waitCloneSet(t, cs, "2 pods available", settled(2))
		waitEntries(t, etcd, cs, 2)
	})

}

func entryKey(ns, pod string) string { return "/services/" + ns + "/web/" + pod }

// waitEntries waits until the CloneSet has replicas pods, each Normal and
// Ready, and the registry holds exactly those, each with its IP, port,
// node, UID and revision. The pods are listed again at every look, so a
// pod that is still being replaced is not taken for the final one.
func waitEntries(t *testing.T, etcd *clientv3.Client, cs *appsv1alpha1.CloneSet, replicas int) {
	t.Helper()
	ns := cs.Namespace
	eventually(t, time.Minute, "the registry holds the pods", func(ctx context.Context) (bool, string, error) {
		pods := clonePods(t, cs)
		if len(pods) != replicas {
			return false, fmt.Sprintf("%d pods", len(pods)), nil
		}
		for _, p := range pods {
			if p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) || podCondition(&p, corev1.PodReady) != corev1.ConditionTrue {
				return false, fmt.Sprintf("%s is %s, not Normal and Ready", p.Name, p.Labels[pub.LifecycleStateKey]), nil
			}
		}
		resp, err := etcd.Get(ctx, "/services/"+ns+"/", clientv3.WithPrefix())
		if err != nil {
			return false, err.Error(), nil
		}
		got := map[string]bridge.Instance{}
		for _, kv := range resp.Kvs {
			var inst bridge.Instance
			if err := json.Unmarshal(kv.Value, &inst); err != nil {
				return false, "", err
			}
			got[string(kv.Key)] = inst
		}
		for _, p := range pods {
			inst, ok := got[entryKey(ns, p.Name)]
			if !ok || inst.IP != p.Status.PodIP || inst.Port != 8080 || inst.UID != string(p.UID) ||
				inst.Revision != p.Labels["controller-revision-hash"] || inst.Node != p.Spec.NodeName {
				return false, fmt.Sprintf("%s (ip %s, uid %s, node %s, revision %s): entry %+v", p.Name, p.Status.PodIP, p.UID,
					p.Spec.NodeName, p.Labels["controller-revision-hash"], inst), nil
			}
		}
		return len(got) == len(pods), fmt.Sprintf("%d entries for %d pods", len(got), len(pods)), nil
	})
}

// registryLog is what a watch of the registry saw.
type registryLog struct {
	mu     sync.Mutex
	events []string // "put <key>" or "delete <key>"
	seen   []time.Time
}

// watchRegistry records every write under prefix with a watch of the
// test's own.
func watchRegistry(t *testing.T, etcd *clientv3.Client, prefix string) *registryLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &registryLog{}
	ch := etcd.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix())
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case resp, ok := <-ch:
				if !ok {
					// The registry went away (the outage); watch again.
					ch = etcd.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix())
					continue
				}
				l.mu.Lock()
				for _, ev := range resp.Events {
					kind := "put"
					if ev.Type == clientv3.EventTypeDelete {
						kind = "delete"
					}
					l.events = append(l.events, kind+" "+string(ev.Kv.Key))
					l.seen = append(l.seen, time.Now())
				}
				l.mu.Unlock()
			}
		}
	}()
	return l
}

func (l *registryLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

func (l *registryLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events[n:]...)
}

// history is what happened to one key, in order.
func (l *registryLog) history(key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if kind, k, _ := strings.Cut(e, " "); k == key {
			out = append(out, kind)
		}
	}
	return out
}

// firstDeleteAt is when the watch saw key deleted first (zero if never):
// the delete happened no later.
func (l *registryLog) firstDeleteAt(key string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.events {
		if e == "delete "+key {
			return l.seen[i]
		}
	}
	return time.Time{}
}

// hasSeq reports whether want occurs in got in order (not necessarily
// next to each other).
func hasSeq(got []string, want ...string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// etcdBridgeConfig writes the configuration of a bridge named name for the
// CloneSets labelled registry=label in ns (every namespace when ""),
// registering in the etcd at endpoint with a 3s handler timeout, and
// returns its path.
func etcdBridgeConfig(t *testing.T, name, label, ns, endpoint string) string {
	t.Helper()
	// It follows both kinds, so the RBAC audit sees every rule of the
	// bridge's role used.
	config := fmt.Sprintf("name: %s\nworkloads: [{kind: CloneSet, selector: {matchLabels: {registry: %s}}}, {kind: StatefulSet, selector: {matchLabels: {registry: %s}}}]\n"+
		"port: 8080\ntimeout: 3s\nresync: 2s\netcd: {endpoints: [%q], prefix: /services, ttl: 5s}\n", name, label, label, endpoint)
	if ns != "" {
		config += "namespace: " + ns + "\n"
	}
	path := filepath.Join(t.TempDir(), "bridge.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
