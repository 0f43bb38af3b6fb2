package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/protection"
)

func TestPodChange(t *testing.T) {
	ready := func(rv string, m ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, Labels: map[string]string{"app": "a"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		for _, f := range m {
			f(p)
		}
		return p
	}
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }
	notReady := func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
	for name, c := range map[string]struct {
		old, updated *corev1.Pod
		matters      bool
		after        time.Duration
	}{
		"resync":              {ready("1"), ready("1"), false, 0},
		"annotation only":     {ready("1"), ready("2", func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} }), false, 0},
		"became unready":      {ready("1"), ready("2", notReady), true, 0},
		"became ready":        {ready("1", notReady), ready("2"), true, 0},
		"relabelled":          {ready("1"), ready("2", func(p *corev1.Pod) { p.Labels["app"] = "b" }), true, 0},
		"started terminating": {ready("1"), ready("2", deleting), true, deletionDelay},
		"still terminating":   {ready("1", deleting), ready("2", deleting, notReady), false, 0},
	} {
		matters, after := PodChange(c.old, c.updated)
		if matters != c.matters || after != c.after {
			t.Errorf("%s: %v after %s, want %v after %s", name, matters, after, c.matters, c.after)
		}
	}
}

// A budget's Protecting condition is True only in a namespace labelled
// for fail-closed disruption webhooks; in a system namespace, the
// manager's own or one not labelled yet it is False with the reason; a
// change is reported once.
func TestProtecting(t *testing.T) {
	r := &Reconciler{ManagerNamespace: "lifeline-system"}
	labelled := map[string]string{protection.Disruptions.Label(): "true"}
	for _, c := range []struct {
		namespace string
		labels    map[string]string
		status    metav1.ConditionStatus
		reason    string
	}{
		{"shop", labelled, metav1.ConditionTrue, "WebhooksServeNamespace"},
		{"shop", nil, metav1.ConditionFalse, "NamespaceNotLabelled"},
		{"shop", map[string]string{protection.Disruptions.Label(): "false"}, metav1.ConditionFalse, "NamespaceNotLabelled"},
		{"lifeline-system", labelled, metav1.ConditionFalse, "ManagerNamespace"},
		{"kube-system", labelled, metav1.ConditionFalse, "NamespaceNotServed"},
		{"kube-node-lease", nil, metav1.ConditionFalse, "NamespaceNotServed"},
	} {
		pub := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: "b"}}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.namespace, Labels: c.labels}}
		status := &policyv1alpha1.PodUnavailableBudgetStatus{}
		if !r.protecting(pub, ns, status) {
			t.Errorf("%s %v: a new condition not reported as a change", c.namespace, c.labels)
		}
		got := meta.FindStatusCondition(status.Conditions, policyv1alpha1.ConditionProtecting)
		if got == nil || got.Status != c.status || got.Reason != c.reason {
			t.Errorf("%s %v: condition %+v, want %s %s", c.namespace, c.labels, got, c.status, c.reason)
		}
		if r.protecting(pub, ns, status) {
			t.Errorf("%s %v: an unchanged condition reported as a change", c.namespace, c.labels)
		}
	}
}
