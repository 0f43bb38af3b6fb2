package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// TestGarbageCollectorPassesByTheRules: deleting a Deployment and a
// CloneSet whose budgets allow no disruption at all (minAvailable equal to
// the replicas, which OpenKruise never clamps, so the budgets' own numbers
// never free them) and whose CloneSet guards its preDelete hook: the
// garbage collector deletes every pod, because a pod whose workload is
// gone or being deleted costs no budget and passes the hook guard; no user
// name is exempt. Run both ways kube-controller-manager may run: its
// controllers under their own service accounts (the garbage collector is
// generic-garbage-collector) and all under its own identity
// (system:kube-controller-manager). Before the rule, the second way left
// the pods held.
func TestGarbageCollectorPassesByTheRules(t *testing.T) {
	for _, perController := range []bool{true, false} {
		t.Run(fmt.Sprintf("per-controller credentials: %v", perController), func(t *testing.T) {
			if !perController {
				ownIdentity(t)
			}
			gcDeletesHeldPods(t)
		})
	}
}

// ownIdentity runs kube-controller-manager's controllers under its own
// identity until the test ends, granted what they need as such a cluster
// grants it.
func ownIdentity(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-kcm-own-identity"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:kube-controller-manager"}}}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := local.RestartControllerManager(false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := local.RestartControllerManager(true); err != nil {
			t.Errorf("restoring kube-controller-manager: %v", err)
		}
		_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
}

func gcDeletesHeldPods(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	create(t, newDeployment(ns, "gc-deploy", 3))
	cs := newCloneSet(ns, "gc-cs", 2)
	cs.Annotations = map[string]string{appsv1alpha1.GuardHooksAnnotation: "true"}
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"registered": "true"}}}
	cs.Spec.Template.Labels["registered"] = "true"
	createCloneSet(t, cs)
	for name, target := range map[string]policyv1alpha1.TargetReference{
		"gc-deploy": {APIVersion: "apps/v1", Kind: "Deployment", Name: "gc-deploy"},
		"gc-cs":     {APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "gc-cs"},
	} {
		create(t, newBudget(ns, name, policyv1alpha1.PodUnavailableBudgetSpec{TargetReference: &target,
			MinAvailable: ptr.To(intstr.FromInt32(map[string]int32{"gc-deploy": 3, "gc-cs": 2}[name]))}))
	}
	waitBudget(t, ns, "gc-deploy", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 3, CurrentAvailable: 3})
	waitBudget(t, ns, "gc-cs", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 2, DesiredAvailable: 2, CurrentAvailable: 2})
	// The budgets are in force: a user's eviction is refused.
	if err := evictOnce(ns, livePods(t, ns, "app=gc-deploy")[0].Name); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting a pod under a budget allowing nothing: %v, want 429", err)
	}

	held := len(livePods(t, ns, ""))
	start := time.Now()
	// Foreground: the Deployment and its ReplicaSet are being deleted, not
	// gone, while the collector deletes the pods; the CloneSet goes at once.
	foreground := metav1.DeletePropagationForeground
	if err := client.AppsV1().Deployments(ns).Delete(ctx, "gc-deploy", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, cs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "the garbage collector deleting every pod", func(ctx context.Context) (bool, string, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items)), nil
	})
	t.Logf("the garbage collector deleted %d held pods in %s", held, time.Since(start).Round(100*time.Millisecond))
	// Not one of its deletions was refused first (and retried later).
	events, err := client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if (e.Reason == "DisruptionRefused" || e.Reason == "DisruptionNotDecided") && strings.Contains(e.Note, "system:") {
			t.Errorf("the garbage collector was refused: %s", e.Note)
		}
	}
}
