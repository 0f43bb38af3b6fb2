package migration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// The Advanced DaemonSet of the swap: a node agent on every node.
const agentSet = "agent"

// agentScene is what the swap must carry over of it: its revisions and
// the update revision's short hash, which its pods carry.
type agentScene struct {
	revisions      []string
	updateRevision string
	desired        int32
}

// createAgentUnderOpenKruise makes the Advanced DaemonSet and waits until
// OpenKruise runs a pod on each node.
func createAgentUnderOpenKruise(t *testing.T, ns string) agentScene {
	labels := map[string]string{"app": agentSet}
	set := &appsv1beta1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentSet}, Spec: appsv1beta1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "nginx:1.27"}}}},
		UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
	}}
	if err := k8s.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	var scene agentScene
	eventually(t, 2*time.Minute, "OpenKruise runs the agent on every node", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(set), set); err != nil {
			return false, err.Error(), nil
		}
		st := set.Status
		scene.desired, scene.updateRevision = st.DesiredNumberScheduled, st.UpdateRevision
		return st.ObservedGeneration == set.Generation && st.DesiredNumberScheduled > 0 && st.NumberAvailable == st.DesiredNumberScheduled &&
				st.UpdatedNumberScheduled == st.DesiredNumberScheduled && len(listPods(t, ns, "app="+agentSet)) == int(st.DesiredNumberScheduled),
			fmt.Sprintf("%+v", st), nil
	})
	scene.revisions = ownedRevisions(t, ns, set.UID)
	return scene
}

// checkAgentAfterSwap: Lifeline adopts OpenKruise's revision and pods as
// they are (its status names the same update revision; the pods were
// checked unchanged with every other), then rolls a new template node by
// node.
func checkAgentAfterSwap(t *testing.T, ns string, scene agentScene) {
	set := &appsv1beta1.DaemonSet{}
	eventually(t, time.Minute, "Lifeline's status of the agent", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: agentSet}, set); err != nil {
			return false, err.Error(), nil
		}
		lifeline := slices.ContainsFunc(set.Status.Conditions, func(c appsv1.DaemonSetCondition) bool { return c.Type == "Progressing" })
		return lifeline && set.Status.ObservedGeneration == set.Generation, fmt.Sprintf("%+v", set.Status), nil
	})
	if set.Status.UpdateRevision != scene.updateRevision || set.Status.UpdatedNumberScheduled != scene.desired {
		t.Errorf("Lifeline's status %+v; OpenKruise's update revision %s on %d nodes", set.Status, scene.updateRevision, scene.desired)
	}
	if revisions := ownedRevisions(t, ns, set.UID); !slices.Equal(revisions, scene.revisions) {
		t.Errorf("agent revisions after the swap %v, OpenKruise's %v", revisions, scene.revisions)
	}
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"agent","image":"nginx:1.28"}]}}}}`
	if err := k8s.Patch(context.Background(), set, ctrlclient.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "app="+agentSet, "the agent rolled to the new template under Lifeline", func(pods []corev1.Pod) bool {
		return len(pods) == int(scene.desired) && all(pods, func(p corev1.Pod) bool {
			return p.Spec.Containers[0].Image == "nginx:1.28" && p.Labels["controller-revision-hash"] != scene.updateRevision
		})
	})
}
