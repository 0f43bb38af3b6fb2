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
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/bridge"
)

// entry is a pod's registry entry as the rollout test reads it.
type entry struct{ UID, Revision string }

// registryUnderTest is a real registry server a bridge or an operator
// writes to, as the tests read it.
type registryUnderTest struct {
	// endpoint is the server's address; etcd, for an etcd registry, a
	// client of the test's own.
	endpoint string
	etcd     *clientv3.Client
	// registry is the server's process, for outages.
	registry *cluster.Registry
	// backend is the bridge configuration's backend section for ns.
	backend func(ns string) string
	// lookup reads the entry of one pod; list every entry of ns by pod.
	lookup func(ctx context.Context, ns, pod string) (entry, bool, error)
	list   func(ctx context.Context, ns string) (map[string]entry, error)
	// writes, if set, starts a log of every write to the registry and
	// returns what it finds wrong with it so far.
	writes func(t *testing.T, ns string) func() []string
}

// TestBridgeRollout walks a CloneSet with preNormal, inPlaceUpdate and
// preDelete hooks through a scale-up, an in-place update of every pod, a
// ReCreate update and a scale-down, killing the bridge (SIGKILL) in the
// middle of both updates, with each registry backend against its real
// server. A watch of the pods, the test's own, reads the registry at each
// change: no pod is in it while not Ready, every pod is in it by the time
// it is Normal, and out of it before its containers change or it is
// deleted. For etcd, a watch of the registry adds: no registration of a pod
// while PreparingUpdate, Updating or PreparingDelete, nothing registered
// twice, no entry dropped and added back.
func TestBridgeRollout(t *testing.T) {
	alongside(t)
	for name, r := range map[string]func(t *testing.T, name string) registryUnderTest{"etcd": etcdUnderTest, "consul": consulUnderTest} {
		t.Run(name, func(t *testing.T) { bridgeRollout(t, name, r(t, "registry-"+name+"-rollout")) })
	}
}

func bridgeRollout(t *testing.T, backend string, r registryUnderTest) {
	ctx := context.Background()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	config := filepath.Join(t.TempDir(), "bridge.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("name: rollout\nnamespace: %s\nport: 8080\nresync: 2s\n%s", ns, r.backend(ns))), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := local.StartBridge(ctx, cluster.BridgeOptions{Root: root, Dir: local.Dir, Config: config, Name: "lifeline-bridge-rollout-" + backend})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(b.Name, syscall.SIGTERM) })
	watchPodsAgainst(t, ns, r, true)
	var writeViolations func() []string
	if r.writes != nil {
		writeViolations = r.writes(t, ns)
	}

	cs := newCloneSet(ns, "web", 4)
	withRegistryHooks(cs)
	createCloneSet(t, cs)
	waitRegistry(t, r, cs, 4, "scale-up")

	killMidway := func(what string) {
		t.Helper()
		waitCloneSet(t, cs, what+" under way", func(c *appsv1alpha1.CloneSet) bool { return c.Status.UpdatedReplicas >= 1 })
		if err := local.RestartBridge(ctx, b, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	killMidway("the in-place update")
	waitRegistry(t, r, cs, 4, "in-place update")

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Spec.UpdateStrategy.Type = appsv1alpha1.RecreateCloneSetUpdateStrategyType
		c.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "GENERATION", Value: "2"}}
	})
	killMidway("the ReCreate update")
	waitRegistry(t, r, cs, 4, "ReCreate update")

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](2) })
	waitRegistry(t, r, cs, 2, "scale-down")

	if writeViolations != nil {
		for _, v := range writeViolations() {
			t.Error(v)
		}
	}
}

// withRegistryHooks gives cs the seeds' hooks, all on the label
// registered ("false" on new pods): preNormal, inPlaceUpdate and preDelete;
// and an in-place strategy, one pod at a time.
func withRegistryHooks(cs *appsv1alpha1.CloneSet) {
	hooked := &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}}
	cs.Spec.Lifecycle = &pub.Lifecycle{PreNormal: hooked, InPlaceUpdate: hooked, PreDelete: hooked}
	cs.Spec.Template.Labels[registered] = "false"
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
}

// waitRegistry waits until the rollout step is done (replicas pods, all
// updated, Normal and Ready) and the registry holds exactly those pods at
// their revisions.
func waitRegistry(t *testing.T, r registryUnderTest, cs *appsv1alpha1.CloneSet, replicas int, step string) {
	t.Helper()
	n := int32(replicas)
	waitWorkloadRegistry(t, r, cs, func(cs *appsv1alpha1.CloneSet) bool {
		return cs.Status.UpdatedAvailableReplicas == n && cs.Status.Replicas == n
	}, func() []corev1.Pod { return clonePods(t, cs) }, n, step)
}

// watchPodsAgainst reads the registry at each pod change that a
// registration must come before or after, and fails the test at its end
// with everything found out of order: a pod is in the registry only once it
// has been Ready (at this revision), out of it before its containers change (no entry of its old
// revision once Updating) and before a deletion through its hook, and, when
// its CloneSet has a preNormal hook, in it by the time it is Normal. (An
// operator without a preNormal hook registers a pod only once it is
// Normal, which is why seed 002 added the hook.) A read the registry cannot
// answer (an outage the test made) is skipped.
func watchPodsAgainst(t *testing.T, ns string, r registryUnderTest, preNormal bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var violations []string
	done := make(chan struct{})
	// wasReady holds the pod UIDs and revisions seen Ready: a registration
	// may only follow that. (kwok sometimes flips a new pod's readiness
	// back and forth; a pod that turns unready later stays registered, as
	// with any registry, whose health checks are its own.)
	wasReady := map[string]bool{}
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			seen := string(pod.UID) + "@" + pod.Labels["controller-revision-hash"]
			if podCondition(pod, corev1.PodReady) == corev1.ConditionTrue {
				wasReady[seen] = true
			}
			if v := podAgainstRegistry(ctx, r, ns, ev.Type, pod, preNormal, wasReady[seen]); v != "" {
				mu.Lock()
				violations = append(violations, fmt.Sprintf("%s %s (%s): %s", pod.Name, pod.Labels[pub.LifecycleStateKey], ev.Type, v))
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, v := range violations {
			t.Error(v)
		}
	})
}

func podAgainstRegistry(ctx context.Context, r registryUnderTest, ns string, ev watch.EventType, pod *corev1.Pod, preNormal, wasReady bool) string {
	state := pod.Labels[pub.LifecycleStateKey]
	ready := podCondition(pod, corev1.PodReady) == corev1.ConditionTrue
	deleted := ev == watch.Deleted || pod.DeletionTimestamp != nil
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	e, found, err := r.lookup(rctx, ns, pod.Name)
	if err != nil {
		return ""
	}
	mine := found && (e.UID == "" || e.UID == string(pod.UID))
	revision := pod.Labels["controller-revision-hash"]
	switch {
	case deleted:
		if mine && state == string(pub.LifecycleStatePreparingDelete) {
			return "deleted while still in the registry"
		}
	case state == string(pub.LifecycleStateUpdating):
		if mine && e.Revision != revision {
			return fmt.Sprintf("updating to %s while still registered at %s", revision, e.Revision)
		}
	case !ready && !wasReady:
		// The registry is read when the event is handled, which may be
		// after the pod turned Ready and was registered: only a pod still
		// not Ready at this revision now was registered before it was.
		if mine && e.Revision == revision {
			now, err := client.CoreV1().Pods(ns).Get(rctx, pod.Name, metav1.GetOptions{})
			if err == nil && now.UID == pod.UID && now.Labels["controller-revision-hash"] == revision &&
				podCondition(now, corev1.PodReady) != corev1.ConditionTrue {
				return "in the registry before it was ever Ready"
			}
		}
	case preNormal && state == string(pub.LifecycleStateNormal) && !mine:
		// Unless it moved on since (taken out for an update or deletion).
		now, err := client.CoreV1().Pods(ns).Get(rctx, pod.Name, metav1.GetOptions{})
		if err == nil && now.UID == pod.UID && now.Labels[pub.LifecycleStateKey] == state {
			return "Normal (available) but not in the registry"
		}
	}
	return ""
}

// etcdUnderTest starts an etcd registry of its own, with a client of the
// test's own; the bridge writes under /services, CloneSet web.
func etcdUnderTest(t *testing.T, name string) registryUnderTest {
	t.Helper()
	reg, err := local.StartEtcdRegistry(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(reg.Name, syscall.SIGTERM) })
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{reg.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() })
	decode := func(value []byte) (bridge.Instance, error) {
		var inst bridge.Instance
		return inst, json.Unmarshal(value, &inst)
	}
	return registryUnderTest{
		endpoint: reg.Endpoint, etcd: etcd, registry: reg,
		backend: func(string) string {
			return fmt.Sprintf("etcd: {endpoints: [%q], prefix: /services, ttl: 10s}\n", reg.Endpoint)
		},
		lookup: func(ctx context.Context, ns, pod string) (entry, bool, error) {
			resp, err := etcd.Get(ctx, "/services/"+ns+"/web/"+pod)
			if err != nil || len(resp.Kvs) == 0 {
				return entry{}, false, err
			}
			inst, err := decode(resp.Kvs[0].Value)
			return entry{UID: inst.UID, Revision: inst.Revision}, err == nil, err
		},
		list: func(ctx context.Context, ns string) (map[string]entry, error) {
			resp, err := etcd.Get(ctx, "/services/"+ns+"/", clientv3.WithPrefix())
			if err != nil {
				return nil, err
			}
			out := map[string]entry{}
			for _, kv := range resp.Kvs {
				inst, err := decode(kv.Value)
				if err != nil {
					return nil, err
				}
				out[inst.Pod] = entry{UID: inst.UID, Revision: inst.Revision}
			}
			return out, nil
		},
		writes: func(t *testing.T, ns string) func() []string {
			return etcdWriteChecker(t, etcd, "/services/"+ns+"/", decode)
		},
	}
}

// etcdWriteChecker watches every write under prefix and judges each: a
// registration of a pod in PreparingUpdate, Updating or PreparingDelete (as
// the entry's own labels say), a registration repeating the entry already
// there, and an entry deleted and written back for the same pod and
// revision are all wrong.
func etcdWriteChecker(t *testing.T, etcd *clientv3.Client, prefix string, decode func([]byte) (bridge.Instance, error)) func() []string {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var mu sync.Mutex
	var violations []string
	last := map[string]string{} // key → "put <uid> <revision>" or "delete <uid> <revision>"
	ch := etcd.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithPrevKV())
	go func() {
		for resp := range ch {
			mu.Lock()
			for _, ev := range resp.Events {
				key := string(ev.Kv.Key)
				if ev.Type == clientv3.EventTypeDelete {
					if ev.PrevKv != nil {
						if inst, err := decode(ev.PrevKv.Value); err == nil {
							last[key] = "delete " + inst.UID + " " + inst.Revision
						}
					}
					continue
				}
				inst, err := decode(ev.Kv.Value)
				if err != nil {
					violations = append(violations, fmt.Sprintf("%s: unreadable entry %q", key, ev.Kv.Value))
					continue
				}
				id := inst.UID + " " + inst.Revision + " " + inst.IP
				switch s := inst.Labels[pub.LifecycleStateKey]; {
				case s == string(pub.LifecycleStatePreparingUpdate) || s == string(pub.LifecycleStateUpdating) || s == string(pub.LifecycleStatePreparingDelete):
					violations = append(violations, fmt.Sprintf("%s registered while %s", key, s))
				case last[key] == "put "+id:
					violations = append(violations, fmt.Sprintf("%s registered twice at %s", key, inst.Revision))
				case last[key] == "delete "+id:
					violations = append(violations, fmt.Sprintf("%s dropped and added back at %s", key, inst.Revision))
				}
				last[key] = "put " + id
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), violations...)
	}
}

// consulUnderTest starts a Consul agent of its own; services are named
// <namespace>-<pod>, with the pod's UID and revision in their Meta.
func consulUnderTest(t *testing.T, name string) registryUnderTest {
	t.Helper()
	consul, err := local.StartConsulRegistry(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(consul.Name, syscall.SIGTERM) })
	toEntry := func(s consulService) entry { return entry{UID: s.Meta["uid"], Revision: s.Meta["revision"]} }
	return registryUnderTest{
		endpoint: consul.Endpoint, registry: consul,
		backend: func(string) string {
			return fmt.Sprintf(`http:
  register:
    url: %[1]s/v1/agent/service/register
    body: >-
      {"ID": "{{.Namespace}}.{{.Pod}}", "Name": "{{.Namespace}}.{{.Workload}}", "Address": "{{.IP}}", "Port": {{.Port}},
      "Meta": {"lifeline-bridge": "{{.Bridge}}", "lifeline-id": "{{.ID}}", "uid": "{{.UID}}", "revision": "{{.Revision}}"}}
  unregister:
    url: %[1]s/v1/agent/service/deregister/{{.Namespace}}.{{.Pod}}
  list:
    url: %[1]s/v1/agent/services
    bridgeField: Meta.lifeline-bridge
    idField: Meta.lifeline-id
    uidField: Meta.uid
    ipField: Address
    portField: Port
`, consul.Endpoint)
		},
		lookup: func(ctx context.Context, ns, pod string) (entry, bool, error) {
			var s consulService
			err := getJSON(ctx, consul.Endpoint+"/v1/agent/service/"+ns+"."+pod, &s)
			if err != nil && strings.Contains(err.Error(), "404") {
				return entry{}, false, nil
			}
			return toEntry(s), err == nil, err
		},
		list: func(ctx context.Context, ns string) (map[string]entry, error) {
			all := map[string]consulService{}
			if err := getJSON(ctx, consul.Endpoint+"/v1/agent/services", &all); err != nil {
				return nil, err
			}
			out := map[string]entry{}
			for id, s := range all {
				if pod, ok := strings.CutPrefix(id, ns+"."); ok {
					out[pod] = toEntry(s)
				}
			}
			return out, nil
		},
	}
}
