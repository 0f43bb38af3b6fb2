package planner

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

const (
	oldHash = "old111"
	newHash = "new222"
)

func template(image string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

// newSet is a set rolling out with maxUnavailable 1, its status saying
// desired nodes.
func newSet(desired int32) *appsv1beta1.DaemonSet {
	return &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "set-uid", Generation: 2},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: *template("agent:2"),
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{Type: appsv1beta1.StandardRollingUpdateType,
					MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0))}},
			BurstReplicas: ptr.To(intstr.FromInt32(250)),
		},
		Status: appsv1beta1.DaemonSetStatus{DesiredNumberScheduled: desired},
	}
}

func nodes(n int) []*corev1.Node {
	var out []*corev1.Node
	for i := range n {
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{}}})
	}
	return out
}

var podSeq int

// runningPod is a pod of the set on node at hash, Running and Ready for an
// hour, created age before now.
func runningPod(node, hash string) *corev1.Pod {
	podSeq++
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("agent-%d", podSeq), UID: types.UID(fmt.Sprint("uid-", podSeq)),
			CreationTimestamp: metav1.NewTime(now.Add(-2*time.Hour + time.Duration(podSeq)*time.Second)),
			Labels:            map[string]string{"app": "agent", appsv1.ControllerRevisionHashLabelKey: hash, pub.LifecycleStateKey: string(pub.LifecycleStateNormal)}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "agent:" + hash}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
	}
}

func snapshot(set *appsv1beta1.DaemonSet, ns []*corev1.Node, pods ...*corev1.Pod) Snapshot {
	return Snapshot{Set: set, Nodes: ns, Pods: pods, UpdateHash: newHash, Now: now,
		Templates: map[string]*corev1.PodTemplateSpec{oldHash: template("agent:1"), newHash: template("agent:2")}}
}

// summary names each action by kind and target, a pod by its node and
// revision: "CreatePod node-1 new222", "DeletePod node-0/old111",
// "SetState node-0/old111 PreparingDelete".
func summary(actions []podlife.Action) []string {
	var out []string
	for _, a := range actions {
		switch a := a.(type) {
		case podlife.CreatePod:
			out = append(out, "CreatePod "+a.InstanceID+" "+a.Revision)
		case podlife.SetState:
			out = append(out, fmt.Sprintf("SetState %s %s", podID(a.Pod), a.To))
		default:
			out = append(out, a.Kind()+" "+podID(a.Target()))
		}
	}
	return out
}

func podID(pod *corev1.Pod) string { return NodeOf(pod) + "/" + revisionHash(pod) }
