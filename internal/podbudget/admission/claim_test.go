package admission

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/budget"
)

// A record this process wrote is confirmed at the time budget.Free reads
// back, also for a pod in both maps at different seconds (it was not: the
// unavailablePods time was kept and Free reads disruptedPods, so the
// process claimed its own record with a write it did not need).
func TestConfirmKeepsTheTimeFreeReads(t *testing.T) {
	now := time.Now()
	g := &Guard{Now: func() time.Time { return now }}
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	updated := &policyv1alpha1.PodUnavailableBudget{Status: policyv1alpha1.PodUnavailableBudgetStatus{
		DisruptedPods:   map[string]metav1.Time{"p": metav1.NewTime(now.Add(-3 * time.Second))},
		UnavailablePods: map[string]metav1.Time{"p": metav1.NewTime(now)},
	}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	g.confirm(key, updated, []*ask{{pod: pod}}, []budget.Decision{{Allowed: true, Status: &updated.Status}})
	at, ok := budget.RecordedAt(&updated.Status, "p")
	if !ok || !g.isConfirmed(key, "p", at) {
		t.Errorf("the record Free reads (%v, %v) is not confirmed", at, ok)
	}
}
