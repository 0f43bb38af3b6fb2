package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// TestBridgeRBACRuleRemoval is TestRBACRuleRemoval for the hook operators'
// role (config/bridge, the chart's lifeline-bridge): each rule removed in
// turn, the bridge restarted with no lease and probed: metrics scraped, a
// hooked CloneSet pod registered in etcd with the hook's event, and
// unregistered on scale-in. make test runs one rule; make rbac-audit all.
func TestBridgeRBACRuleRemoval(t *testing.T) {
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := etcdUnderTest(t, "audit-registry-etcd")
	config := etcdBridgeConfig(t, "audit", "audit", "", r.registry.Endpoint)
	b, err := local.StartBridge(context.Background(), cluster.BridgeOptions{Root: root, Dir: local.Dir, Config: config, Name: "lifeline-bridge-audit"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(b.Name, syscall.SIGTERM) })
	roles := generatedRoles(t, filepath.Join(root, "config", "bridge", "role.yaml"))
	restart := func(ctx context.Context) error {
		_ = local.StopProcess(b.Name, syscall.SIGTERM)
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.ManagerNamespace, Name: "lifeline-bridge-audit"}}
		if err := k8s.Delete(ctx, lease); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return local.StartBridgeAgain(ctx, b)
	}
	probe := func(t *testing.T) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := restart(ctx); err != nil {
			return fmt.Errorf("bridge ready: %v", err)
		}
		return bridgeProbe(t, b, r)
	}
	restore := func() error { return restart(context.Background()) }
	auditRoles(t, roles, []string{"leases"}, probe, restore)
}

// bridgeProbe runs a hooked CloneSet through the bridge and returns the
// first step that failed.
func bridgeProbe(t *testing.T, b *cluster.Bridge, r registryUnderTest) error {
	etcd := r.etcd
	ctx := context.Background()
	entries := func(ctx context.Context, ns string) (int, error) {
		resp, err := etcd.Get(ctx, "/services/"+ns+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return 0, err
		}
		return int(resp.Count), nil
	}
	if err := within("metrics scraped", 10*time.Second, func(context.Context) (bool, string, error) {
		return metricAt(b.MetricsURL, "lifeline_bridge_entries", nil) >= 0, "", nil
	}); err != nil {
		return err
	}
	ns := newNamespace(t)
	cs := newCloneSet(ns, "web", 1)
	cs.Labels = map[string]string{"registry": "audit"}
	withRegistryHooks(cs)
	if err := k8s.Create(ctx, cs); err != nil {
		return fmt.Errorf("CloneSet created: %v", err)
	}
	if err := within("the pod registered and available", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		got := &appsv1alpha1.CloneSet{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(cs), got); err != nil {
			return false, err.Error(), nil
		}
		n, err := entries(ctx, ns)
		return err == nil && n == 1 && got.Status.AvailableReplicas == 1, fmt.Sprintf("%d entries, %+v %v", n, got.Status, err), nil
	}); err != nil {
		return err
	}
	if err := within("the hook's event recorded", 10*time.Second, func(ctx context.Context) (bool, string, error) {
		events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return e.Reason == "HookCompleted" }), fmt.Sprintf("%d events", len(events.Items)), nil
	}); err != nil {
		return err
	}
	// With the registry down, the preDelete handler fails past the
	// bridge's timeout (3s): the pod is flagged in its status, and the
	// hook stays held until the registry is back.
	if err := local.StopProcess(r.registry.Name, syscall.SIGTERM); err != nil {
		return fmt.Errorf("registry stopped: %v", err)
	}
	if err := k8s.Patch(ctx, cs, ctrlclient.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":0}}`))); err != nil {
		return fmt.Errorf("scaled in: %v", err)
	}
	flagged := within("the late hook flagged on the pod", 20*time.Second, func(ctx context.Context) (bool, string, error) {
		pods := &corev1.PodList{}
		if err := k8s.List(ctx, pods, ctrlclient.InNamespace(ns)); err != nil {
			return false, err.Error(), nil
		}
		for _, p := range pods.Items {
			if podCondition(&p, "hook.lifeline.dev/audit") == corev1.ConditionFalse {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d pods, none flagged", len(pods.Items)), nil
	})
	if err := local.StartRegistryAgain(ctx, r.registry); err != nil {
		return fmt.Errorf("registry started again: %v", err)
	}
	if flagged != nil {
		return flagged
	}
	return within("the pod unregistered and gone", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		n, err := entries(ctx, ns)
		pods := &corev1.PodList{}
		if err == nil {
			err = k8s.List(ctx, pods, ctrlclient.InNamespace(ns))
		}
		return err == nil && n == 0 && len(pods.Items) == 0, fmt.Sprintf("%d entries, %d pods %v", n, len(pods.Items), err), nil
	})
}
