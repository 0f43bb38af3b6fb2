package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// consulService is what Consul's agent API says of a service.
type consulService struct {
	ID      string
	Service string
	Address string
	Port    int
	Meta    map[string]string
}

// TestBridgeKeepsConsulInStep runs the bridge's HTTP backend against a real
// Consul agent (dev mode, built from its pinned module): registration
// before a pod is available, deregistration before its update and its
// deletion, a restart that rewrites nothing, and the service of a pod
// deleted behind the hooks' back removed by the reconcile.
func TestBridgeKeepsConsulInStep(t *testing.T) {
	ctx := context.Background()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := consulUnderTest(t, "registry-consul")
	consul := r.registry

	ns := newNamespace(t)
	config := filepath.Join(t.TempDir(), "bridge.yaml")
	if err := os.WriteFile(config, []byte("name: consul\ncloneSets: {matchLabels: {registry: consul}}\nnamespace: "+ns+
		"\nport: 8080\nresync: 2s\n"+r.backend(ns)), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := local.StartBridge(ctx, cluster.BridgeOptions{Root: root, Dir: local.Dir, Config: config, Name: "lifeline-bridge-consul"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(b.Name, syscall.SIGTERM) })
	services := func(ctx context.Context) (map[string]consulService, error) {
		out := map[string]consulService{}
		return out, getJSON(ctx, consul.Endpoint+"/v1/agent/services", &out)
	}
	watchPodsAgainst(t, ns, r, true)

	cs := newCloneSet(ns, "web", 2)
	cs.Labels = map[string]string{"registry": "consul"}
	withRegistryHooks(cs)
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "2 pods registered and available", settled(2))
	// waitServices waits until the CloneSet has replicas pods, Normal and
	// Ready, and Consul holds exactly those, listing the pods again at every
	// look.
	waitServices := func(what string, replicas int) {
		t.Helper()
		eventually(t, time.Minute, what, func(ctx context.Context) (bool, string, error) {
			pods := clonePods(t, cs)
			if len(pods) != replicas {
				return false, fmt.Sprintf("%d pods", len(pods)), nil
			}
			got, err := services(ctx)
			if err != nil {
				return false, err.Error(), nil
			}
			for _, p := range pods {
				if p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) || podCondition(&p, corev1.PodReady) != corev1.ConditionTrue {
					return false, fmt.Sprintf("%s is %s, not Normal and Ready", p.Name, p.Labels[pub.LifecycleStateKey]), nil
				}
				s, ok := got[ns+"-"+p.Name]
				if !ok || s.Address != p.Status.PodIP || s.Port != 8080 || s.Service != "web" || s.Meta["uid"] != string(p.UID) ||
					s.Meta["revision"] != p.Labels["controller-revision-hash"] {
					return false, fmt.Sprintf("%s: %+v", p.Name, s), nil
				}
			}
			return len(got) == len(pods), fmt.Sprintf("%d services for %d pods", len(got), len(pods)), nil
		})
	}
	waitServices("Consul holds both pods", 2)

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	waitCloneSet(t, cs, "2 pods updated and available", func(c *appsv1alpha1.CloneSet) bool {
		return settled(2)(c) && c.Status.UpdatedAvailableReplicas == 2
	})
	waitServices("Consul holds both pods at the new revision", 2)

	// A restart writes nothing: every service keeps its ModifyIndex.
	indexes := func(ctx context.Context) map[string]uint64 {
		var entries []struct {
			ServiceID   string
			ModifyIndex uint64
		}
		if err := getJSON(ctx, consul.Endpoint+"/v1/catalog/service/web", &entries); err != nil {
			t.Fatal(err)
		}
		out := map[string]uint64{}
		for _, e := range entries {
			out[e.ServiceID] = e.ModifyIndex
		}
		return out
	}
	var before map[string]uint64
	eventually(t, time.Minute, "the catalog has both services", func(ctx context.Context) (bool, string, error) {
		before = indexes(ctx)
		return len(before) == 2, fmt.Sprint(before), nil
	})
	if err := local.RestartBridge(ctx, b, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the restarted bridge has reconciled", func(context.Context) (bool, string, error) {
		n := metricAt(b.MetricsURL, "lifeline_bridge_entries", map[string]string{"bridge": "consul"})
		return n == 2, fmt.Sprintf("%v entries", n), nil
	})
	if after := indexes(ctx); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a restart rewrote services: ModifyIndex %v, before %v", after, before)
	}

	// A pod deleted behind the hooks' back (as an eviction or a lost node
	// would) leaves; its replacement comes in through its own hooks.
	gone := clonePods(t, cs)[0]
	if err := client.CoreV1().Pods(ns).Delete(ctx, gone.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the deleted pod's service removed", func(ctx context.Context) (bool, string, error) {
		got, err := services(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		s, ok := got[ns+"-"+gone.Name]
		return !ok || s.Meta["uid"] != string(gone.UID), fmt.Sprintf("%+v", s), nil
	})
	waitCloneSet(t, cs, "2 pods available again", settled(2))
	waitServices("Consul holds the pods, the replacement included", 2)

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](1) })
	waitCloneSet(t, cs, "1 pod", settled(1))
	waitServices("Consul holds the one pod left", 1)
}

func getJSON(ctx context.Context, url string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// TestSeed001OperatorExample runs examples/registry-operator, the SDK's
// 60-line version of seed 001's operator, on seed 001's CloneSet (its
// inPlaceUpdate and preDelete labels, no preNormal hook) with a real Consul
// agent: new pods are registered once available, each is taken out before
// its in-place update and put back after, and taken out before deletion,
// judged by reading Consul at each pod change.
func TestSeed001OperatorExample(t *testing.T) {
	seed001(t, "seed001-example", "./examples/registry-operator")
}

// TestSeed001OperatorAsWritten is the same scenario driven by seed 001's
// operator exactly as the seed writes it (test/e2e/seed001operator: plain
// controller-runtime, its own predicates and label flips, no SDK): an
// existing OpenKruise hook operator works on a Lifeline CloneSet unchanged.
func TestSeed001OperatorAsWritten(t *testing.T) {
	seed001(t, "seed001-as-written", "./test/e2e/seed001operator")
}

func seed001(t *testing.T, name, operator string) {
	ctx := context.Background()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := consulUnderTest(t, "registry-consul-"+name)
	consul := r.registry
	if err := local.StartHookOperator(ctx, root, local.Dir, name, operator, "--consul="+consul.Endpoint); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(name, syscall.SIGTERM) })

	ns := newNamespace(t)
	watchPodsAgainst(t, ns, r, false)
	const inplace, del = "example.com/unready-blocker-inplace", "example.com/unready-blocker-delete"
	cs := newCloneSet(ns, "cloneset-lifecycle-demo", 2)
	cs.Spec.Lifecycle = &pub.Lifecycle{
		InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{inplace: "true"}},
		PreDelete:     &pub.LifecycleHook{LabelsHandler: map[string]string{del: "true"}},
	}
	cs.Spec.Template.Labels[inplace], cs.Spec.Template.Labels[del] = "true", "true"
	cs.Spec.Template.Labels["example.com/newly-create"] = "true"
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("20%"))
	createCloneSet(t, cs)

	waitRegistered := func(what string, replicas int) {
		t.Helper()
		eventually(t, time.Minute, what, func(ctx context.Context) (bool, string, error) {
			pods := clonePods(t, cs)
			got := map[string]consulService{}
			if err := getJSON(ctx, consul.Endpoint+"/v1/agent/services", &got); err != nil {
				return false, err.Error(), nil
			}
			// The operator handles every CloneSet of the cluster, as seed
			// 001's does; this test looks at its own namespace.
			for id := range got {
				if !strings.HasPrefix(id, ns+"-") {
					delete(got, id)
				}
			}
			for _, p := range pods {
				s, ok := got[ns+"-"+p.Name]
				// No address check: these operators register a pod once, and
				// kwok sometimes gives a new pod a second IP right after its
				// first (the bridge corrects that; a plain operator cannot).
				if p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) || !ok || s.Address == "" ||
					s.Meta["revision"] != p.Labels["controller-revision-hash"] {
					return false, fmt.Sprintf("%s (%s): %+v", p.Name, p.Labels[pub.LifecycleStateKey], s), nil
				}
			}
			return len(pods) == replicas && len(got) == replicas, fmt.Sprintf("%d pods, %d services", len(pods), len(got)), nil
		})
	}
	waitRegistered("both pods registered", 2)
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	waitCloneSet(t, cs, "2 pods updated and available", func(c *appsv1alpha1.CloneSet) bool {
		return settled(2)(c) && c.Status.UpdatedAvailableReplicas == 2
	})
	waitRegistered("both pods registered at the new revision", 2)
	for _, p := range clonePods(t, cs) {
		if p.Labels[inplace] != "true" {
			t.Errorf("%s: the inPlaceUpdate handler was not put back: %s=%q", p.Name, inplace, p.Labels[inplace])
		}
	}
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](1) })
	waitCloneSet(t, cs, "1 pod", settled(1))
	waitRegistered("the one pod left registered", 1)
}
