package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// The chart lints clean and renders, with its defaults and with each file
// of charts/lifeline/ci (together every documented option), into objects
// the API server accepts (server-side dry run). CRDs the chart's optional
// objects need from other projects (ServiceMonitor, cert-manager's Issuer
// and Certificate) are stand-ins that check kind and metadata only.
func TestChartRendersAndPassesDryRun(t *testing.T) {
	helm := helmBinary(t)
	chart := filepath.Join(repoRoot, "charts", "lifeline")
	ensureNamespace(t, "lifeline-system")
	if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-f", filepath.Join("testdata", "stub-crds.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("stand-in CRDs: %v\n%s", err, out)
	}
	files, err := filepath.Glob(filepath.Join(chart, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no values files in %s/ci: %v", chart, err)
	}
	for _, values := range files {
		t.Run(filepath.Base(values), func(t *testing.T) {
			if out, err := exec.Command(helm, "lint", "--strict", "-f", values, chart).CombinedOutput(); err != nil {
				t.Fatalf("helm lint: %v\n%s", err, out)
			}
			rendered := helmTemplate(t, helm, chart, "-f", values)
			dry := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "--dry-run=server", "--force-conflicts", "-f", "-")
			dry.Stdin = bytes.NewReader(withoutConversion(t, rendered))
			if out, err := dry.CombinedOutput(); err != nil {
				t.Fatalf("server-side dry run: %v\n%s", err, out)
			}
		})
	}
}

// The schema refuses values the chart cannot honour, naming the field.
func TestChartSchemaRefusesBadValues(t *testing.T) {
	helm := helmBinary(t)
	chart := filepath.Join(repoRoot, "charts", "lifeline")
	for _, c := range []struct{ set, field string }{
		{"replicas=0", "/replicas"},
		{"certificates.mode=vault", "/certificates/mode"},
		{"features.hookWaitWarning=soon", "/features/hookWaitWarning"},
		{"replica=2", "'replica'"},
		// A budget no drain can satisfy.
		{"replicas=1", "podDisruptionBudget.minAvailable (1) must be below replicas (1)"},
		{"podDisruptionBudget.minAvailable=100%", "podDisruptionBudget.minAvailable (100%) must be below replicas"},
		// A read role over the core group's Secrets, or over everything.
		{"features.persistentPodState.workloads[0].apiGroup=,features.persistentPodState.workloads[0].resource=secrets", "/features/persistentPodState/workloads/0/apiGroup"},
		{"features.persistentPodState.workloads[0].apiGroup=apps,features.persistentPodState.workloads[0].resource=*", "/features/persistentPodState/workloads/0/resource"},
		// Unauthenticated profiling, plain-HTTP metrics around metrics.secure.
		{"extraArgs[0]=--pprof-bind-address=:6060", "/extraArgs/0"},
		{"extraArgs[0]=--metrics-secure=false", "/extraArgs/0"},
		// A NetworkPolicy that would let nothing reach the webhooks.
		{"webhook.networkPolicy.enabled=true", "/webhook/networkPolicy/from"},
	} {
		out, err := exec.Command(helm, "template", "lifeline", chart, "--set", c.set).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.field) {
			t.Errorf("--set %s: %v, want a schema error naming %s\n%s", c.set, err, c.field, out)
		}
	}
}

// The chart and config/default install the same objects under the same
// names: the same webhook configurations, webhook for webhook, the same
// roles and the same Services, Deployment and PodDisruptionBudget.
func TestChartAgreesWithConfigDefault(t *testing.T) {
	helm := helmBinary(t)
	fromChart := byKindName(t, helmTemplate(t, helm, filepath.Join(repoRoot, "charts", "lifeline")))
	kustomized, err := exec.Command(kubectl, "kustomize", filepath.Join(repoRoot, "config", "default")).Output()
	if err != nil {
		t.Fatal(err)
	}
	fromKustomize := byKindName(t, kustomized)
	for key := range fromKustomize {
		if _, ok := fromChart[key]; !ok && !strings.HasPrefix(key, "Namespace/") {
			t.Errorf("config/default installs %s, the chart does not", key)
		}
	}
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		for key := range fromKustomize {
			if !strings.HasPrefix(key, kind+"/") {
				continue
			}
			var a, b map[string]any
			if err := yaml.Unmarshal(fromKustomize[key], &a); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(fromChart[key], &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a["webhooks"], b["webhooks"]) {
				t.Errorf("%s: the chart's webhooks differ from config/default's", key)
			}
		}
	}
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.Unmarshal(fromChart["ValidatingWebhookConfiguration/lifeline-validating-webhooks"], &v); err != nil {
		t.Fatal(err)
	}
	for _, w := range v.Webhooks {
		if w.FailurePolicy != nil && *w.FailurePolicy == admissionregistrationv1.Fail && w.NamespaceSelector != nil {
			for _, e := range w.NamespaceSelector.MatchExpressions {
				if e.Key == corev1.LabelMetadataName && !slices.Contains(e.Values, "lifeline-system") {
					t.Errorf("%s fails closed and may select the release namespace: %v", w.Name, e.Values)
				}
			}
		}
	}
}

// webhook.binding narrows the pod binding webhook to the namespaces it
// selects, still never the system ones, or drops it, and leaves every
// other webhook as config/default has it.
func TestChartNarrowsTheBindingWebhook(t *testing.T) {
	helm := helmBinary(t)
	chart := filepath.Join(repoRoot, "charts", "lifeline")
	webhooks := func(args ...string) map[string]admissionregistrationv1.MutatingWebhook {
		var m admissionregistrationv1.MutatingWebhookConfiguration
		if err := yaml.Unmarshal(byKindName(t, helmTemplate(t, helm, chart, args...))["MutatingWebhookConfiguration/lifeline-mutating-webhooks"], &m); err != nil {
			t.Fatal(err)
		}
		out := map[string]admissionregistrationv1.MutatingWebhook{}
		for _, w := range m.Webhooks {
			out[w.Name] = w
		}
		return out
	}
	defaults := webhooks()
	narrowed := webhooks("--set", "webhook.binding.namespaceSelector.matchLabels.team=web")
	sel := narrowed["mpod.lifeline.dev"].NamespaceSelector
	if sel == nil || sel.MatchLabels["team"] != "web" || !reflect.DeepEqual(sel.MatchExpressions, defaults["mpod.lifeline.dev"].NamespaceSelector.MatchExpressions) {
		t.Errorf("narrowed binding webhook's namespaceSelector: %+v, want team=web on top of %+v", sel, defaults["mpod.lifeline.dev"].NamespaceSelector)
	}
	dropped := webhooks("--set", "webhook.binding.enabled=false")
	if _, ok := dropped["mpod.lifeline.dev"]; ok {
		t.Error("webhook.binding.enabled=false still installs mpod.lifeline.dev")
	}
	for name, w := range defaults {
		if name == "mpod.lifeline.dev" {
			continue
		}
		if !reflect.DeepEqual(narrowed[name], w) || !reflect.DeepEqual(dropped[name], w) {
			t.Errorf("webhook.binding changed %s", name)
		}
	}
}

func helmBinary(t *testing.T) string {
	t.Helper()
	helm, err := binaries.Binary(context.Background(), "helm", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	return helm
}

func helmTemplate(t *testing.T, helm, chart string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(helm, append([]string{"template", "lifeline", chart, "--namespace", "lifeline-system", "--include-crds"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// byKindName splits rendered YAML into its documents by kind/name.
func byKindName(t *testing.T, rendered []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, doc := range strings.Split(string(rendered), "\n---\n") {
		var meta metav1.PartialObjectMetadata
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind != "" {
			out[meta.Kind+"/"+meta.Name] = []byte(doc)
		}
	}
	return out
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// In cert-manager mode the serving certificate is signed by a CA of the
// chart's (a self-signed root, a CA Issuer) and the webhook configurations
// take that root from the serving Secret's ca.crt: a renewal of the
// serving certificate leaves the caBundle as it was, so no request fails
// while the kubelet refreshes the mounted Secret. (A renewal by a real
// cert-manager is not run: its binaries' modules are not served here.)
func TestChartCertManagerModeIsACAChain(t *testing.T) {
	helm := helmBinary(t)
	objs := byKindName(t, helmTemplate(t, helm, filepath.Join(repoRoot, "charts", "lifeline"), "--set", "certificates.mode=cert-manager"))
	spec := func(key string) map[string]any {
		var o map[string]any
		if err := yaml.Unmarshal(objs[key], &o); err != nil || o == nil {
			t.Fatalf("%s not rendered (%v)", key, err)
		}
		return o["spec"].(map[string]any)
	}
	issuer := func(s map[string]any) string { return s["issuerRef"].(map[string]any)["name"].(string) }
	serving, root := spec("Certificate/lifeline-webhook"), spec("Certificate/lifeline-webhook-ca")
	ca := spec("Issuer/" + issuer(serving))
	caSecret, _ := ca["ca"].(map[string]any)
	if caSecret == nil || caSecret["secretName"] != root["secretName"] || root["isCA"] != true {
		t.Errorf("the serving certificate's issuer %v is not a CA issuer over the root %v", ca, root)
	}
	if _, ok := spec("Issuer/" + issuer(root))["selfSigned"]; !ok {
		t.Errorf("the root is not self-signed: issuer %s", issuer(root))
	}
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.Unmarshal(objs["ValidatingWebhookConfiguration/lifeline-validating-webhooks"], &v); err != nil {
		t.Fatal(err)
	}
	if got := v.Annotations["cert-manager.io/inject-ca-from"]; got != "lifeline-system/lifeline-webhook" {
		t.Errorf("the webhooks' CA is injected from %q, want the serving certificate's (its ca.crt, the root)", got)
	}
}
