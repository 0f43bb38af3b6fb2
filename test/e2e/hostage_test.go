package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/protection"
)

// With no manager replica serving, Lifeline holds hostage only the
// namespaces that asked for protection. In a namespace without a budget,
// a guarded CloneSet or a PersistentPodState, a Deployment scales down, a
// StatefulSet creates its pods and kubectl delete works: 0 operations
// refused. In a namespace with a budget, deletes and evictions are
// refused; in the manager's own namespace, a budget never turns its
// webhooks to fail closed, so the manager can always be repaired.
func TestManagerOutageHoldsOnlyProtectedNamespaces(t *testing.T) {
	ctx := context.Background()
	open, guarded := newNamespace(t), newNamespace(t)
	create(t, kruiseDeployment(open, "web", 3))
	create(t, statefulSet(open, "db", 1))
	create(t, kruiseDeployment(guarded, "web", 2))
	create(t, kruiseBudget(guarded, intstr.FromInt32(0)))
	// A Deployment under a budget in the manager's namespace: judged
	// while Lifeline runs, never fail closed.
	selfDeploy := kruiseDeployment("lifeline-system", "outage-self", 1)
	create(t, selfDeploy)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), selfDeploy) })
	self := kruiseBudget("lifeline-system", intstr.FromInt32(0))
	self.Name = "outage-self"
	self.Spec.Selector.MatchLabels = map[string]string{"app": "outage-self"}
	create(t, self)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), self) })

	waitProtecting(t, guarded, "webserver-pub", metav1.ConditionTrue, "WebhooksServeNamespace")
	waitProtecting(t, "lifeline-system", self.Name, metav1.ConditionFalse, "ManagerNamespace")
	for _, ns := range []string{open, "lifeline-system"} {
		got, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if protection.Protected(got.Labels, protection.Disruptions) || protection.Protected(got.Labels, protection.Placement) {
			t.Fatalf("namespace %s labelled %v; it asks for no protection", ns, got.Labels)
		}
	}
	waitRunning(t, open, "app=web", 3)
	waitRunning(t, open, "app=db", 1)
	waitRunning(t, guarded, "app=web", 2)
	waitAvailable(t, guarded, "webserver-pub", 2)
	waitRunning(t, "lifeline-system", "app=outage-self", 1)

	// While the manager runs, the budget in its namespace is enforced.
	waitAvailable(t, "lifeline-system", self.Name, 1)
	selfPods, err := client.CoreV1().Pods("lifeline-system").List(ctx, metav1.ListOptions{LabelSelector: "app=outage-self"})
	if err != nil || len(selfPods.Items) != 1 {
		t.Fatalf("outage-self pods: %v (%d)", err, len(selfPods.Items))
	}
	selfPod := selfPods.Items[0]
	if err := client.CoreV1().Pods("lifeline-system").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "lifeline-system", Name: selfPod.Name}}); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting a pod its budget allows none of, with the manager up: %v, want 429", err)
	}

	if err := local.StopProcess(lifeline.Name, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := local.StartLifelineAgain(context.Background(), lifeline); err != nil {
			t.Errorf("restarting the manager: %v", err)
		}
	})

	refused := 0
	note := func(what string, err error) {
		if err != nil {
			refused++
			t.Errorf("%s in an unprotected namespace with the manager down: %v", what, err)
		}
	}
	note("scaling a Deployment down", setReplicas(ctx, "Deployment", open, "web", 1))
	note("scaling a StatefulSet up", setReplicas(ctx, "StatefulSet", open, "db", 3))
	pods, err := client.CoreV1().Pods(open).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("db pods: %v (%d)", err, len(pods.Items))
	}
	note("kubectl delete pod", client.CoreV1().Pods(open).Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}))
	note("deleting a pod of the manager's namespace", client.CoreV1().Pods("lifeline-system").Delete(ctx, selfPod.Name, metav1.DeleteOptions{}))
	eventually(t, time.Minute, "the Deployment scaled down to 1", func(ctx context.Context) (bool, string, error) {
		n, err := liveCount(ctx, open, "app=web")
		return n == 1, fmt.Sprintf("%d pods", n), err
	})
	eventually(t, time.Minute, "the StatefulSet's 3 pods created", func(ctx context.Context) (bool, string, error) {
		n, err := liveCount(ctx, open, "app=db")
		return n == 3, fmt.Sprintf("%d pods", n), err
	})
	t.Logf("manager down, unprotected namespace: %d operations refused", refused)

	// The protected namespace waits for Lifeline.
	guardedPods, err := client.CoreV1().Pods(guarded).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(guardedPods.Items) == 0 {
		t.Fatalf("guarded pods: %v (%d)", err, len(guardedPods.Items))
	}
	victim := guardedPods.Items[0].Name
	if err := client.CoreV1().Pods(guarded).Delete(ctx, victim, metav1.DeleteOptions{}); err == nil {
		t.Error("a pod under a budget deleted with the manager down")
	}
	if err := client.CoreV1().Pods(guarded).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: guarded, Name: victim}}); err == nil {
		t.Error("a pod under a budget evicted with the manager down")
	}
}

// waitProtecting waits for a budget's Protecting condition.
func waitProtecting(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("budget %s/%s Protecting %s %s", ns, name, status, reason), func(ctx context.Context) (bool, string, error) {
		pub := &policyv1alpha1.PodUnavailableBudget{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, pub); err != nil {
			return false, "", err
		}
		c := findCondition(pub.Status.Conditions, policyv1alpha1.ConditionProtecting)
		if c == nil {
			return false, "no condition", nil
		}
		return c.Status == status && c.Reason == reason, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message), nil
	})
}

// waitAvailable waits until a budget counts n pods available.
func waitAvailable(t *testing.T, ns, name string, n int32) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("budget %s/%s counting %d available", ns, name, n), func(ctx context.Context) (bool, string, error) {
		pub := &policyv1alpha1.PodUnavailableBudget{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, pub); err != nil {
			return false, "", err
		}
		return pub.Status.CurrentAvailable == n, fmt.Sprintf("%+v", pub.Status), nil
	})
}

// waitRunning waits until n pods matching selector run and are ready.
func waitRunning(t *testing.T, ns, selector string, n int) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("%d %s pods ready in %s", n, selector, ns), func(ctx context.Context) (bool, string, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, "", err
		}
		ready := 0
		for i := range pods.Items {
			if podCondition(&pods.Items[i], corev1.PodReady) == corev1.ConditionTrue {
				ready++
			}
		}
		return ready == n, fmt.Sprintf("%d ready", ready), nil
	})
}

// liveCount counts the pods matching selector not being deleted.
func liveCount(ctx context.Context, ns, selector string) (int, error) {
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

// setReplicas patches a Deployment's or StatefulSet's replicas, as
// kubectl scale does, and returns what the API server answered.
func setReplicas(ctx context.Context, kind, ns, name string, replicas int32) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	var err error
	if kind == "Deployment" {
		_, err = client.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	} else {
		_, err = client.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	return err
}
