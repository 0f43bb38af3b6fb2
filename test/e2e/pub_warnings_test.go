package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/manager"
)

// warnings collects the API server's warnings to one client.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.got
	w.got = nil
	return out
}

// TestBudgetWarningsAndProtecting: a budget is never silently off. One in
// kube-system, which the pod webhooks leave out, is warned about at
// creation and reports Protecting False (NamespaceNotServed); one in a
// served namespace reports Protecting True. A budget whose selector can
// match the same pods as another's is warned about at creation, naming it
// (a disruption must be admitted by both).
func TestBudgetWarningsAndProtecting(t *testing.T) {
	ctx := context.Background()
	collected := &warnings{}
	cfg := rest.CopyConfig(local.Config)
	cfg.WarningHandler = collected
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: manager.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	spec := func(labels map[string]string) policyv1alpha1.PodUnavailableBudgetSpec {
		return policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	}
	protecting := func(ns, name string, want metav1.ConditionStatus, reason string) {
		t.Helper()
		eventually(t, time.Minute, "the Protecting condition of "+ns+"/"+name, func(ctx context.Context) (bool, string, error) {
			b := &policyv1alpha1.PodUnavailableBudget{}
			if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
				return false, err.Error(), nil
			}
			got := meta.FindStatusCondition(b.Status.Conditions, policyv1alpha1.ConditionProtecting)
			return got != nil && got.Status == want && got.Reason == reason, fmt.Sprintf("%+v", got), nil
		})
	}

	system := newBudget("kube-system", "e2e-unserved", spec(map[string]string{"app": "e2e-unserved"}))
	if err := c.Create(ctx, system); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), system) })
	if got := strings.Join(collected.take(), "\n"); !strings.Contains(got, "protects nothing") {
		t.Errorf("no warning creating a budget in kube-system: %q", got)
	}
	protecting("kube-system", "e2e-unserved", metav1.ConditionFalse, "NamespaceNotServed")

	ns := newNamespace(t)
	if err := c.Create(ctx, newBudget(ns, "web", spec(map[string]string{"app": "web"}))); err != nil {
		t.Fatal(err)
	}
	if got := collected.take(); len(got) != 0 {
		t.Errorf("warnings creating a lone budget: %q", got)
	}
	protecting(ns, "web", metav1.ConditionTrue, "WebhooksServeNamespace")
	if err := c.Create(ctx, newBudget(ns, "front", spec(map[string]string{"tier": "front"}))); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(collected.take(), "\n"); !strings.Contains(got, "PodUnavailableBudget web covers some of the same pods") {
		t.Errorf("no overlap warning creating a budget whose selector can match web's pods: %q", got)
	}
}
