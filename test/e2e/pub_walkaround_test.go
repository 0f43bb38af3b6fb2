package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestBudgetCannotBeWalkedAroundWithMetadata: under a budget that allows
// no disruption, a team that may patch pods (the built-in edit role) but
// not edit budgets cannot free a covered pod with metadata alone: not by
// relabelling it out of the selector, not by pointing its controller
// reference at a workload that does not exist (the garbage collector would
// delete it), not by setting pub.kruise.io/no-protect. Each is refused and
// the pod stays as it was. Who may edit the budget (the cluster admin
// here) may set no-protect, and the pod can then be evicted, as in
// OpenKruise.
func TestBudgetCannotBeWalkedAroundWithMetadata(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	budgetedDeployment(t, ns, "walk", 2)
	app := appTeam(t, ns)
	pod := livePods(t, ns, "app=walk")[0]

	paths := []struct{ name, patch, refusal string }{
		{"relabelled out of the selector", `{"metadata":{"labels":{"app":"elsewhere"}}}`, "no longer match, which takes it out of PodUnavailableBudget walk"},
		{"controller pointed at a workload that does not exist", fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"ghost","uid":%q,"controller":true}]}}`, types.UID("00000000-0000-0000-0000-00000000dead")),
			"does not exist, so the garbage collector would delete it"},
		{"no-protect set", `{"metadata":{"annotations":{"pub.kruise.io/no-protect":"true"}}}`, "sets pub.kruise.io/no-protect"},
	}
	for _, p := range paths {
		_, err := app.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, []byte(p.patch), metav1.PatchOptions{})
		if err == nil || !strings.Contains(err.Error(), p.refusal) || !strings.Contains(err.Error(), "allows no more unavailable pods") {
			t.Errorf("%s by the application team: %v, want refused with %q", p.name, err, p.refusal)
		}
	}
	got, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["app"] != "walk" || metav1.GetControllerOf(got).UID != metav1.GetControllerOf(&pod).UID || got.Annotations["pub.kruise.io/no-protect"] != "" {
		t.Fatalf("the pod changed: labels %v, controller %v, annotations %v", got.Labels, metav1.GetControllerOf(got), got.Annotations)
	}

	// Who may edit the budget may take the pod out of it.
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, []byte(paths[2].patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("no-protect set by the cluster admin: %v", err)
	}
	eventually(t, 20*time.Second, "the opted-out pod evicted", func(context.Context) (bool, string, error) {
		err := evictOnce(ns, pod.Name)
		return err == nil, fmt.Sprint(err), nil
	})
}

// appTeam is a client for a user bound, in ns, to the built-in edit role:
// it may patch pods but not edit PodUnavailableBudgets.
func appTeam(t *testing.T, ns string) kubernetes.Interface {
	t.Helper()
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-team"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "app-team"}}}
	if _, err := client.RbacV1().RoleBindings(ns).Create(context.Background(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(local.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "app-team", Groups: []string{"system:authenticated"}}
	return kubernetes.NewForConfigOrDie(cfg)
}
