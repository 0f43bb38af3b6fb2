package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// TestWebhookPortTakesOnlyTheAPIServer: the manager's webhook port, which
// anyone who reaches the pod can call, refuses a pod admission without
// the API server's client certificate (none, or a cluster user's); with
// it, a forged review of a pod that does not exist records nothing in the
// budget, while the real pod is judged (refused: the budget allows none).
// The conversion path, which the API server calls without a certificate,
// is open, but its body is capped. The metrics endpoint serves the
// webhook's certificate, which the webhook CA verifies.
func TestWebhookPortTakesOnlyTheAPIServer(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	budgetedDeployment(t, ns, "port", 1)
	pod := livePods(t, ns, "app=port")[0]
	forged := pod.DeepCopy()
	forged.Name, forged.UID = "port-forged", "00000000-0000-0000-0000-00000000f00d"

	apiServer, err := local.WebhookClient()
	if err != nil {
		t.Fatal(err)
	}
	admin, err := tls.X509KeyPair(local.Config.CertData, local.Config.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	post := func(cert *tls.Certificate, path string, body io.Reader) (int, []byte) {
		t.Helper()
		cfg := &tls.Config{RootCAs: webhookCA(t), ServerName: "localhost", MinVersion: tls.VersionTLS12}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Post("https://"+lifeline.WebhookAddr()+path, "application/json", body)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	for _, c := range []struct {
		who  string
		cert *tls.Certificate
	}{{"no certificate", nil}, {"a cluster user's certificate", &admin}} {
		if code, _ := post(c.cert, "/validate-pod", bytes.NewReader(deleteReview(t, &pod))); code != http.StatusForbidden {
			t.Errorf("a pod admission with %s: %d, want 403", c.who, code)
		}
	}
	for _, c := range []struct {
		what    string
		pod     *corev1.Pod
		allowed bool
	}{{"a forged review of a pod that does not exist", forged, true}, {"the real pod", &pod, false}} {
		code, body := post(&apiServer, "/validate-pod", bytes.NewReader(deleteReview(t, c.pod)))
		out := admissionv1.AdmissionReview{}
		if err := json.Unmarshal(body, &out); code != http.StatusOK || err != nil || out.Response == nil || out.Response.Allowed != c.allowed {
			t.Errorf("%s as the API server: %d %s, want allowed %v", c.what, code, body, c.allowed)
		}
	}
	got := &policyv1alpha1.PodUnavailableBudget{}
	if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "port"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.DisruptedPods) != 0 {
		t.Errorf("the budget recorded %v, want nothing", got.Status.DisruptedPods)
	}
	// The metrics are served with the webhook's certificate: a scraper
	// given the webhook CA verifies them before it sends its token.
	verified := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: webhookCA(t), ServerName: "localhost", MinVersion: tls.VersionTLS12}}}
	if resp, err := verified.Get(lifeline.MetricsURL); err != nil {
		t.Errorf("the metrics endpoint's certificate, verified with the webhook CA: %v", err)
	} else {
		resp.Body.Close()
	}
	huge := io.MultiReader(strings.NewReader(`{"request":{"uid":"`), strings.NewReader(strings.Repeat("x", 65<<20)), strings.NewReader(`"}}`))
	if code, body := post(nil, "/convert", huge); code == http.StatusOK && !strings.Contains(string(body), "too large") {
		t.Errorf("a 65 MiB conversion review: %d %.200s, want refused", code, body)
	}
}

func deleteReview(t *testing.T, pod *corev1.Pod) []byte {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "forged", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Operation: admissionv1.Delete,
			Namespace: pod.Namespace, Name: pod.Name, OldObject: runtime.RawExtension{Raw: raw}}}
	out, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// webhookCA is the CA of the manager's serving certificate.
func webhookCA(t *testing.T) *x509.CertPool {
	t.Helper()
	s, err := client.CoreV1().Secrets(cluster.ManagerNamespace).Get(context.Background(), "lifeline-webhook-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatal("no CA in lifeline-webhook-certs")
	}
	return pool
}
