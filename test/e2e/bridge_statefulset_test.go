package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// TestBridgeAdvancedStatefulSet is seed 001's scenario on an Advanced
// StatefulSet, driven by lifeline-bridge with an etcd registry: the bridge
// names the kind it follows (workloads: StatefulSet) and its handlers are
// the CloneSet's. Pods are registered before they count as available
// (preNormal), taken out before their in-place update and put back after,
// and taken out before a scale-in deletes them. The test's own pod watch
// reads the registry at each change (watchPodsAgainst), and a watch of
// etcd judges every write.
func TestBridgeAdvancedStatefulSet(t *testing.T) {
	alongside(t)
	ctx := context.Background()
	r := etcdUnderTest(t, "registry-etcd-asts")
	ns := newNamespace(t)
	startKindBridge(t, "asts", "StatefulSet", ns, r)
	watchPodsAgainst(t, ns, r, true)
	writes := r.writes(t, ns)

	set := newAdvancedStatefulSet(ns, "web", 3, appsv1.ParallelPodManagement)
	hooked := &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}}
	set.Spec.Lifecycle = &pub.Lifecycle{PreNormal: hooked, InPlaceUpdate: hooked, PreDelete: hooked}
	set.Spec.Template.Labels[registered] = "false"
	set.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	set.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{
		PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
	}
	if err := k8s.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	waitStatefulSetRegistry(t, r, set, 3, "scale-up")
	uids := map[string]string{}
	for _, p := range stsPods(t, ns) {
		uids[p.Name] = string(p.UID)
	}

	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "db:2" })
	waitStatefulSetRegistry(t, r, set, 3, "in-place update")
	for _, p := range stsPods(t, ns) {
		if uids[p.Name] != string(p.UID) || p.Spec.Containers[0].Image != "db:2" {
			t.Errorf("%s: uid %s (was %s), image %s: not updated in place", p.Name, p.UID, uids[p.Name], p.Spec.Containers[0].Image)
		}
	}

	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	waitStatefulSetRegistry(t, r, set, 1, "scale-down")
	for _, v := range writes() {
		t.Error(v)
	}
}

// waitStatefulSetRegistry waits until the set has settled at replicas
// pods and the registry holds exactly its pods (waitRegistry).
func waitStatefulSetRegistry(t *testing.T, r registryUnderTest, set *appsv1beta1.StatefulSet, replicas int32, step string) {
	t.Helper()
	waitWorkloadRegistry(t, r, set, stsSettled(replicas), nsPods(t, set.Namespace), replicas, step)
}

// waitWorkloadRegistry waits until the workload obj has settled with n
// pods (as pods lists them), each Normal and Ready, and the registry holds
// exactly those pods at their UIDs and revisions.
func waitWorkloadRegistry[T ctrlclient.Object](t *testing.T, r registryUnderTest, obj T, settled func(T) bool, pods func() []corev1.Pod, n int32, step string) {
	t.Helper()
	eventually(t, 2*time.Minute, step+": the registry holds every pod", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error(), nil
		}
		if !settled(obj) {
			return false, fmt.Sprintf("status %+v", reflect.ValueOf(obj).Elem().FieldByName("Status").Interface()), nil
		}
		got, err := r.list(ctx, obj.GetNamespace())
		if err != nil {
			return false, err.Error(), nil
		}
		pods := pods()
		for _, p := range pods {
			if p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) || podCondition(&p, corev1.PodReady) != corev1.ConditionTrue {
				return false, fmt.Sprintf("%s is %s", p.Name, p.Labels[pub.LifecycleStateKey]), nil
			}
			if e := got[p.Name]; e.UID != string(p.UID) || e.Revision != p.Labels["controller-revision-hash"] {
				return false, fmt.Sprintf("%s: entry %+v", p.Name, e), nil
			}
		}
		return len(pods) == int(n) && len(got) == int(n), fmt.Sprintf("%d pods, %d entries", len(pods), len(got)), nil
	})
}

// nsPods lists the live pods of ns, when called.
func nsPods(t *testing.T, ns string) func() []corev1.Pod {
	return func() []corev1.Pod { return stsPods(t, ns) }
}

// stsPods lists the live pods of ns.
func stsPods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, ctrlclient.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// startKindBridge starts a bridge named name that follows the workloads of
// kind in ns and writes to r, stopped when the test ends.
func startKindBridge(t *testing.T, name, kind, ns string, r registryUnderTest) {
	t.Helper()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "bridge.yaml")
	text := fmt.Sprintf("name: %s\nnamespace: %s\nworkloads: [{kind: %s}]\nport: 8080\nresync: 2s\n%s", name, ns, kind, r.backend(ns))
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := local.StartBridge(context.Background(), cluster.BridgeOptions{Root: root, Dir: local.Dir, Config: config, Name: "lifeline-bridge-" + name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(b.Name, syscall.SIGTERM) })
}
