package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// daemonTaint keeps other tests' pods off the nodes a DaemonSet test
// registers; the test's set tolerates it.
const daemonTaint = "lifeline.dev/daemonset-test"

// daemonNodes registers simulated nodes of the test's own, labelled for
// its set's node selector, and waits until they are Ready with only the
// test's taint left.
func daemonNodes(t *testing.T, ns string, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", "type": "kwok", daemonTaint: ns},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: daemonTaint, Effect: corev1.TaintEffectNoSchedule}}}}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	eventually(t, 2*time.Minute, "the test's nodes Ready", func(ctx context.Context) (bool, string, error) {
		for _, name := range names {
			node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			if len(node.Spec.Taints) != 1 {
				return false, fmt.Sprintf("%s taints %v", name, node.Spec.Taints), nil
			}
		}
		return true, "", nil
	})
}

func newAdvancedDaemonSet(ns, name string) *appsv1beta1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					Containers:   []corev1.Container{{Name: "agent", Image: "agent:1"}},
					NodeSelector: map[string]string{daemonTaint: ns},
					Tolerations:  []corev1.Toleration{{Key: daemonTaint, Operator: corev1.TolerationOpExists}},
				},
			},
		},
	}
}

// dsSettled: desired nodes, each with an available pod of the update
// revision, none misscheduled.
func dsSettled(desired int32) func(*appsv1beta1.DaemonSet) bool {
	return func(s *appsv1beta1.DaemonSet) bool {
		st := s.Status
		return st.ObservedGeneration == s.Generation && st.DesiredNumberScheduled == desired && st.CurrentNumberScheduled == desired &&
			st.NumberReady == desired && st.NumberAvailable == desired && st.UpdatedNumberScheduled == desired && st.NumberMisscheduled == 0
	}
}

// releaseHeld plays the hook's operator: it takes the handler off every
// pod of the set held in PreparingDelete, until stop is closed.
func releaseHeld(t *testing.T, ns, selector, handler string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err == nil {
				for _, p := range list.Items {
					if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete) && p.Labels[handler] != "" {
						patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, handler))
						_, _ = client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// TestAdvancedDaemonSetRollsOutNodeByNode: a set runs one pod on each of
// its nodes, placed by the scheduler through a node-name affinity term;
// a rolling update with maxUnavailable 1 under a preDelete hook replaces
// them one node at a time, each pod deleted only once its operator (this
// test) took its handler off; a node that joins gets a pod of the new
// revision; a node that stops matching, and one tainted NoExecute, lose
// theirs through the hook. An independent watch checks that never more
// than one node was without a Ready pod during the rollout, and that no
// pod went while its hook held it.
func TestAdvancedDaemonSetRollsOutNodeByNode(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	nodes := []string{ns + "-a", ns + "-b", ns + "-c"}
	daemonNodes(t, ns, nodes...)
	log := logPods(t, ns)
	const hook = "example.com/registered"
	set := newAdvancedDaemonSet(ns, "agent")
	set.Spec.Template.Labels[hook] = "true"
	set.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{hook: "true"}, MarkPodNotReady: true}}
	create(t, set)
	waitAdvancedDaemonSet(t, set, "a pod Ready on each of the 3 nodes", dsSettled(3))
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru == nil || ru.Type != appsv1beta1.StandardRollingUpdateType ||
		ru.MaxUnavailable.IntValue() != 1 || set.Spec.BurstReplicas == nil || set.Spec.BurstReplicas.IntValue() != 250 {
		t.Fatalf("defaults: %+v, burstReplicas %v", ru, set.Spec.BurstReplicas)
	}
	pods := livePods(t, ns, "app=agent")
	var on []string
	for _, p := range pods {
		on = append(on, p.Spec.NodeName)
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.APIVersion != "apps.kruise.io/v1beta1" || ref.Kind != "DaemonSet" {
			t.Fatalf("%s's owner: %+v", p.Name, ref)
		}
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] != set.Status.UpdateRevision || p.Labels[pub.LifecycleStateKey] != "Normal" {
			t.Fatalf("%s's labels %v, update revision %s", p.Name, p.Labels, set.Status.UpdateRevision)
		}
		terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Values[0] != p.Spec.NodeName {
			t.Fatalf("%s on %s, node affinity %+v", p.Name, p.Spec.NodeName, terms)
		}
	}
	slices.Sort(on)
	if !slices.Equal(on, nodes) {
		t.Fatalf("pods on %v, want one on each of %v", on, nodes)
	}

	fewest := watchAvailable(t, ns, "app=agent")
	release := releaseHeld(t, ns, "app=agent", hook)
	defer release()
	updateAdvancedDaemonSet(t, set, func(s *appsv1beta1.DaemonSet) { s.Spec.Template.Spec.Containers[0].Image = "agent:2" })
	waitAdvancedDaemonSet(t, set, "every node updated", dsSettled(3))
	if n := fewest(); n < 2 {
		t.Fatalf("%d pods were Ready at the worst moment of the rollout; maxUnavailable 1 allows no fewer than 2", n)
	}
	if n := livePodsWithImage(t, ns, "app=agent", "agent:2"); n != 3 {
		t.Fatalf("%d pods run agent:2, want 3", n)
	}

	// A node joins; one stops matching the node selector; one is tainted
	// NoExecute.
	joined := ns + "-d"
	daemonNodes(t, ns, joined)
	waitAdvancedDaemonSet(t, set, "the joined node has its pod", dsSettled(4))
	if _, err := client.CoreV1().Nodes().Patch(ctx, nodes[0], types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, daemonTaint)), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	taint := fmt.Sprintf(`{"spec":{"taints":[{"key":%q,"effect":"NoSchedule"},{"key":"example.com/broken","effect":"NoExecute"}]}}`, daemonTaint)
	if _, err := client.CoreV1().Nodes().Patch(ctx, nodes[1], types.StrategicMergePatchType, []byte(taint), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAdvancedDaemonSet(t, set, "pods only on the two nodes left", dsSettled(2))
	eventually(t, time.Minute, "the pods of the nodes that left gone", func(ctx context.Context) (bool, string, error) {
		var where []string
		for _, p := range livePods(t, ns, "app=agent") {
			where = append(where, p.Spec.NodeName)
		}
		slices.Sort(where)
		return slices.Equal(where, []string{nodes[2], joined}), fmt.Sprint(where), nil
	})
	for _, ev := range log.all() {
		// Kubernetes' taint eviction deletes the NoExecute node's pod
		// itself; no hook holds that (the hook guard would refuse it).
		if isDelete(ev) && ev.pod.DeletionTimestamp != nil && ev.pod.Labels[hook] == "true" && ev.pod.Spec.NodeName != nodes[1] {
			t.Fatalf("%s on %s was deleted while its preDelete hook held it", ev.pod.Name, ev.pod.Spec.NodeName)
		}
	}
}

// TestAdvancedDaemonSetUpdatesInPlace: under InPlaceIfPossible, an image
// change restarts each pod's container in place: the pods keep their
// names, UIDs and nodes, one node at a time.
func TestAdvancedDaemonSetUpdatesInPlace(t *testing.T) {
	ns := newNamespace(t)
	daemonNodes(t, ns, ns+"-a", ns+"-b")
	set := newAdvancedDaemonSet(ns, "agent")
	set.Spec.UpdateStrategy = appsv1beta1.DaemonSetUpdateStrategy{Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{Type: appsv1beta1.InplaceRollingUpdateType}}
	create(t, set)
	waitAdvancedDaemonSet(t, set, "a pod Ready on each of the 2 nodes", dsSettled(2))
	before := map[types.UID]string{}
	for _, p := range livePods(t, ns, "app=agent") {
		before[p.UID] = p.Spec.NodeName
		if podCondition(&p, pub.InPlaceUpdateReady) != corev1.ConditionTrue {
			t.Fatalf("%s: InPlaceUpdateReady %q, want True (gates %v)", p.Name, podCondition(&p, pub.InPlaceUpdateReady), p.Spec.ReadinessGates)
		}
	}
	fewest := watchAvailable(t, ns, "app=agent")
	updateAdvancedDaemonSet(t, set, func(s *appsv1beta1.DaemonSet) { s.Spec.Template.Spec.Containers[0].Image = "agent:2" })
	waitAdvancedDaemonSet(t, set, "both pods updated in place", dsSettled(2))
	for _, p := range livePods(t, ns, "app=agent") {
		if node, ok := before[p.UID]; !ok || node != p.Spec.NodeName || p.Spec.Containers[0].Image != "agent:2" {
			t.Fatalf("%s (uid %s) on %s with %s: not the same pod updated in place", p.Name, p.UID, p.Spec.NodeName, p.Spec.Containers[0].Image)
		}
	}
	if n := fewest(); n < 1 {
		t.Fatalf("%d pods Ready at the worst moment; maxUnavailable 1 of 2 allows no fewer than 1", n)
	}
}
