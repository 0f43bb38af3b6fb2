package controller

import (
	"context"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/daemonset/planner"
	"github.com/lifeline-k8s/lifeline/internal/phases/phasestest"
)

// testbed is a Reconciler on a fake client, its shell set up as the
// manager sets it up.
func testbed(t *testing.T, objs ...client.Object) (*Reconciler, client.Client, *events.FakeRecorder) {
	t.Helper()
	r := &Reconciler{}
	c, recorder := phasestest.Fill(t, &r.Shell, &appsv1beta1.DaemonSet{}, objs...)
	r.failed = flowcontrol.NewBackOff(time.Second, 15*time.Minute)
	r.Init(shellKind, &r.Options.Options)
	return r, c, recorder
}

func agentSet() *appsv1beta1.DaemonSet {
	set := &appsv1beta1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "agent-uid", Generation: 1}}
	set.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}
	set.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}}}
	return set
}

func readyNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func reconcileOnce(t *testing.T, r *Reconciler) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "agent"}}); err != nil {
		t.Fatal(err)
	}
}

// Through the shared phases, on fakes: a pod per node that should run
// one, each meant for its node, at the revision written first; the status
// counts the nodes. Nothing more on a second reconcile.
func TestAPodPerNode(t *testing.T) {
	r, c, _ := testbed(t, agentSet(), readyNode("n1"), readyNode("n2"))
	reconcileOnce(t, r)
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods); err != nil {
		t.Fatal(err)
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := c.List(context.Background(), revs); err != nil {
		t.Fatal(err)
	}
	if len(revs.Items) != 1 {
		t.Fatalf("%d revisions, want 1", len(revs.Items))
	}
	var nodes []string
	for _, p := range pods.Items {
		nodes = append(nodes, planner.NodeOf(&p))
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] != revs.Items[0].Labels[appsv1.ControllerRevisionHashLabelKey] {
			t.Errorf("pod %s at revision %q", p.Name, p.Labels[appsv1.ControllerRevisionHashLabelKey])
		}
	}
	sort.Strings(nodes)
	if len(nodes) != 2 || nodes[0] != "n1" || nodes[1] != "n2" {
		t.Fatalf("pods meant for %v, want n1 and n2", nodes)
	}
	set := &appsv1beta1.DaemonSet{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(agentSet()), set); err != nil {
		t.Fatal(err)
	}
	if set.Status.DesiredNumberScheduled != 2 || set.Status.ObservedGeneration != 1 {
		t.Errorf("status %+v", set.Status)
	}
	reconcileOnce(t, r)
	if err := c.List(context.Background(), pods); err != nil || len(pods.Items) != 2 {
		t.Fatalf("%d pods after a second reconcile (%v), want 2", len(pods.Items), err)
	}
}

// A set whose selector is empty selects every pod: it is refused with a
// Warning and nothing is made.
func TestSelectingAllIsRefused(t *testing.T) {
	set := agentSet()
	set.Spec.Selector = &metav1.LabelSelector{}
	r, c, recorder := testbed(t, set, readyNode("n1"))
	reconcileOnce(t, r)
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods); err != nil || len(pods.Items) != 0 {
		t.Fatalf("%d pods (%v), want none", len(pods.Items), err)
	}
	select {
	case e := <-recorder.Events:
		if want := "Warning SelectingAll"; len(e) < len(want) || e[:len(want)] != want {
			t.Errorf("event %q, want %s", e, want)
		}
	default:
		t.Error("no event")
	}
}
