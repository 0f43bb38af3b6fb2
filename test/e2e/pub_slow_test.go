package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// slowBudgetWrites makes the API server slow at writing the status of the
// budgets of ns, as an overloaded one is: a validating webhook of the
// test's own, on podunavailablebudgets/status, holds each write for what
// delay returns (the write's sequence number, from 1) before admitting
// it. It returns how many writes it has held. It is in force once the
// first write (the controller's first status) has gone through it.
func slowBudgetWrites(t *testing.T, ns string, delay func(n int64) time.Duration) *atomic.Int64 {
	t.Helper()
	ctx := context.Background()
	secret, err := client.CoreV1().Secrets("lifeline-system").Get(ctx, "lifeline-webhook-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	var held atomic.Int64
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "not an admission review", http.StatusBadRequest)
			return
		}
		time.Sleep(delay(held.Add(1)))
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	})}
	go func() { _ = server.Serve(ln) }()
	t.Cleanup(func() { _ = server.Close() })

	url := fmt.Sprintf("https://localhost:%d/", ln.Addr().(*net.TCPAddr).Port)
	none := admissionregistrationv1.SideEffectClassNone
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "e2e-slow-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "slow.e2e.lifeline.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: secret.Data["ca.crt"]},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"policy.kruise.io"}, APIVersions: []string{"*"}, Resources: []string{"podunavailablebudgets/status"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             &none,
			TimeoutSeconds:          ptr.To[int32](10),
			AdmissionReviewVersions: []string{"v1"},
		}}}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, config, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), config.Name, metav1.DeleteOptions{})
	})
	return &held
}

// recordLife follows the budget's status with a watch of its own and the
// pods' deletion with another, and returns, for the records the budget
// held, the longest any stayed while its pod was not being deleted: a
// record nobody was admitted by (its request refused) that holds budget.
func recordLife(t *testing.T, ns, name string) func() time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var mu sync.Mutex
	since := map[string]time.Time{}
	terminating := map[string]bool{}
	var longest time.Duration
	settle := func(pod string, now time.Time) {
		if at, ok := since[pod]; ok {
			longest = max(longest, now.Sub(at))
			delete(since, pod)
		}
	}
	list := &policyv1alpha1.PodUnavailableBudgetList{}
	w, err := k8s.Watch(ctx, list, ctrlclient.InNamespace(ns), ctrlclient.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	pw, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			select {
			case e, ok := <-w.ResultChan():
				if !ok {
					return
				}
				b, isBudget := e.Object.(*policyv1alpha1.PodUnavailableBudget)
				if !isBudget || e.Type == watch.Deleted {
					continue
				}
				now := time.Now()
				mu.Lock()
				for pod := range since {
					if _, still := b.Status.DisruptedPods[pod]; !still {
						settle(pod, now)
					}
				}
				for pod := range b.Status.DisruptedPods {
					if _, seen := since[pod]; !seen && !terminating[pod] {
						since[pod] = now
					}
				}
				mu.Unlock()
			case e, ok := <-pw.ResultChan():
				if !ok {
					return
				}
				if p, isPod := e.Object.(*corev1.Pod); isPod && (p.DeletionTimestamp != nil || e.Type == watch.Deleted) {
					mu.Lock()
					terminating[p.Name] = true
					settle(p.Name, time.Now())
					mu.Unlock()
				}
			}
		}
	}()
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		out := longest
		for _, at := range since {
			out = max(out, now.Sub(at))
		}
		return out
	}
}

// slowDeployment runs a Deployment of n pods under a selector budget
// allowing one unavailable, with the budget's status writes slowed.
func slowDeployment(t *testing.T, ns, name string, n int32, pods []string, delay func(int64) time.Duration) *atomic.Int64 {
	t.Helper()
	labels := map[string]string{"app": name}
	held := slowBudgetWrites(t, ns, delay)
	create(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "main", Image: "nginx:1.27"}},
			Tolerations: []corev1.Toleration{{Key: "lifeline.dev/drain-test", Operator: corev1.TolerationOpExists}},
			Affinity:    onNodes(pods),
		}}}})
	create(t, newBudget(ns, name, policyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels}, MaxUnavailable: ptr.To(intstr.FromInt32(1))}))
	waitBudget(t, ns, name, policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: n, DesiredAvailable: n - 1, CurrentAvailable: n, UnavailableAllowed: 1})
	eventually(t, time.Minute, "the slow webhook in force", func(context.Context) (bool, string, error) {
		return held.Load() > 0, fmt.Sprintf("%d writes held", held.Load()), nil
	})
	return held
}

// onNodes keeps pods on the named nodes (none: anywhere).
func onNodes(nodes []string) *corev1.Affinity {
	if len(nodes) == 0 {
		return nil
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: nodes}}}}}}}
}

// evictOnce sends one eviction with no client-side retry.
func evictOnce(ns, pod string) error {
	body, _ := json.Marshal(&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}})
	return client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod).SubResource("eviction").
		Body(body).SetHeader("Content-Type", "application/json").MaxRetries(0).Do(context.Background()).Error()
}

// TestBudgetUndecidedInTimeSpendsNothing: with the budget's status writes
// held 3 s by the API server, an eviction cannot be decided within the
// webhook's time: it is answered 429 with a Retry-After (not the 500 of a
// timed-out webhook), its pod stays, and, read by an independent watch, no
// record of it holds the budget for more than a few seconds (before the
// fix the refused eviction's record held it 20 s): with writes fast
// again, the next pod's eviction is admitted at once.
func TestBudgetUndecidedInTimeSpendsNothing(t *testing.T) {
	ns := newNamespace(t)
	var slow atomic.Bool
	slowDeployment(t, ns, "undecided", 3, nil, func(int64) time.Duration {
		if slow.Load() {
			return 3 * time.Second
		}
		return 0
	})
	longest := recordLife(t, ns, "undecided")
	pods := livePods(t, ns, "app=undecided")
	timedOut := map[string]string{"budget": ns + "/undecided", "result": "timeout"}
	timeouts := counter("lifeline_pub_admissions_total", timedOut)

	slow.Store(true)
	start := time.Now()
	err := evictOnce(ns, pods[0].Name)
	took := time.Since(start)
	slow.Store(false)
	after, retry := apierrors.SuggestsClientDelay(err)
	if !apierrors.IsTooManyRequests(err) || !retry || after < 1 {
		t.Fatalf("eviction under a slow budget write: %v (retry after %d, %v), want 429 with a Retry-After", err, after, retry)
	}
	t.Logf("answered in %s: %v", took.Round(10*time.Millisecond), err)
	if n := counter("lifeline_pub_admissions_total", timedOut); n <= timeouts {
		t.Errorf("no admission counted as timed out (%v before, %v after)", timeouts, n)
	}
	eventually(t, 10*time.Second, "the refused eviction's record gone", func(ctx context.Context) (bool, string, error) {
		b := &policyv1alpha1.PodUnavailableBudget{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "undecided"}, b); err != nil {
			return false, err.Error(), nil
		}
		_, recorded := b.Status.DisruptedPods[pods[0].Name]
		return !recorded && b.Status.UnavailableAllowed == 1, fmt.Sprintf("%+v", b.Status), nil
	})
	if err := evictOnce(ns, pods[1].Name); err != nil {
		t.Errorf("the next eviction with the budget whole: %v", err)
	}
	if p := readPod(t, ns, pods[0].Name); p == nil || p.DeletionTimestamp != nil || p.UID != pods[0].UID {
		t.Errorf("the pod whose eviction was refused is gone or going")
	}
	if l := longest(); l > 8*time.Second {
		t.Errorf("a record of a refused eviction held the budget %s", l.Round(100*time.Millisecond))
	} else {
		t.Logf("longest a record held the budget without its pod going: %s", l.Round(100*time.Millisecond))
	}
}

// TestKubectlDrainWithSlowBudgetWrites: kubectl drain of a node holding
// four pods under a budget allowing one, while every other status write of
// the budget is held 2.5 s by the API server (longer than the guard may
// take). The slow answers are 429s with a Retry-After, which drain retries
// as it retries a PodDisruptionBudget's, so the drain finishes; read by
// independent watches, no record of a refused eviction held the budget
// longer than it takes to withdraw it, and never fewer than 3 pods were
// available.
func TestKubectlDrainWithSlowBudgetWrites(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	drainNodes(t, "slow-a", "slow-b")
	timedOut := map[string]string{"budget": ns + "/slowdrain", "result": "timeout"}
	held := slowDeployment(t, ns, "slowdrain", 4, []string{"slow-a", "slow-b"}, func(n int64) time.Duration {
		if n%2 == 0 {
			return 2500 * time.Millisecond
		}
		return 0
	})
	for _, p := range livePods(t, ns, "app=slowdrain") {
		if p.Spec.NodeName != "slow-a" {
			t.Fatalf("%s runs on %s, want slow-a", p.Name, p.Spec.NodeName)
		}
	}
	if _, err := client.CoreV1().Nodes().Patch(ctx, "slow-b", types.MergePatchType, []byte(`{"spec":{"unschedulable":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	fewest := watchAvailable(t, ns, "app=slowdrain")
	longest := recordLife(t, ns, "slowdrain")

	start := time.Now()
	out, err := exec.Command(local.Binaries["kubectl"], "--kubeconfig", local.Kubeconfig, "drain", "slow-a",
		"--ignore-daemonsets", "--delete-emptydir-data", "--timeout=4m").CombinedOutput()
	t.Logf("kubectl drain took %s; %d budget writes held", time.Since(start).Round(time.Second), held.Load())
	if err != nil {
		t.Fatalf("kubectl drain: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), " evicted"); n != 4 {
		t.Errorf("%d pods evicted, want 4:\n%s", n, out)
	}
	if strings.Contains(string(out), "Internal error") || strings.Contains(string(out), "context deadline exceeded") {
		t.Errorf("the drain met a timed-out webhook:\n%s", out)
	}
	n := counter("lifeline_pub_admissions_total", timedOut)
	if n <= 0 {
		t.Errorf("no eviction was slowed past the guard's deadline: the test did not test it")
	}
	l := longest()
	t.Logf("%v evictions answered 429 for want of time; longest a record held the budget without its pod going: %s", n, l.Round(100*time.Millisecond))
	if l > 8*time.Second {
		t.Errorf("a record of a refused eviction held the budget %s", l.Round(100*time.Millisecond))
	}
	if f := fewest(); f < 3 {
		t.Errorf("%d pods available at the worst moment of the drain, want at least 3", f)
	}
}
