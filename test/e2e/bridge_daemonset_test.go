package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// TestBridgeAdvancedDaemonSet: a node agent whose pods lifeline-bridge
// keeps in an etcd registry (workloads: DaemonSet) with the handlers it
// uses for CloneSets: each pod is registered once Ready and taken out
// before its preDelete hook lets it go, in a rolling update node by node
// and when its node stops qualifying. The test's own pod watch reads the
// registry at each change, and a watch of etcd judges every write.
func TestBridgeAdvancedDaemonSet(t *testing.T) {
	ctx := context.Background()
	r := etcdUnderTest(t, "registry-etcd-ads")
	ns := newNamespace(t)
	nodes := []string{ns + "-a", ns + "-b"}
	daemonNodes(t, ns, nodes...)
	startKindBridge(t, "ads", "DaemonSet", ns, r)
	watchPodsAgainst(t, ns, r, false)
	writes := r.writes(t, ns)

	set := newAdvancedDaemonSet(ns, "web")
	set.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}, MarkPodNotReady: true}}
	set.Spec.Template.Labels[registered] = "false"
	set.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	create(t, set)
	waitDaemonSetRegistry(t, r, set, 2, "pods started")

	updateAdvancedDaemonSet(t, set, func(s *appsv1beta1.DaemonSet) { s.Spec.Template.Spec.Containers[0].Image = "agent:2" })
	waitDaemonSetRegistry(t, r, set, 2, "rolling update")

	if _, err := client.CoreV1().Nodes().Patch(ctx, nodes[0], types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, daemonTaint)), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDaemonSetRegistry(t, r, set, 1, "a node left")
	for _, v := range writes() {
		t.Error(v)
	}
}

// waitDaemonSetRegistry waits until the set has settled on desired nodes
// and the registry holds exactly its pods (waitRegistry).
func waitDaemonSetRegistry(t *testing.T, r registryUnderTest, set *appsv1beta1.DaemonSet, desired int32, step string) {
	t.Helper()
	waitWorkloadRegistry(t, r, set, dsSettled(desired), nsPods(t, set.Namespace), desired, step)
}
