package integration

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// kubectl apply -k config/default works as it is: the API server accepts
// every object (server-side dry run), and the objects name each other and
// the manager's flag defaults consistently: the webhook configurations
// call the Service that selects the manager's pods, and are the ones the
// manager's certificate rotation patches; the certificate is issued for
// that Service's name; the Role names the Secret, lease and ConfigMap the
// manager uses by default.
func TestInstallManifestsAgree(t *testing.T) {
	// The namespace exists, as it would after a first apply: a dry run
	// creates nothing for the objects after it to land in.
	ensureNamespace(t, "lifeline-system")
	rendered, err := exec.Command(kubectl, "kustomize", filepath.Join(repoRoot, "config", "default")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/default: %v", err)
	}
	dry := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "--dry-run=server", "--force-conflicts", "-f", "-")
	dry.Stdin = bytes.NewReader(withoutConversion(t, rendered))
	if out, err := dry.CombinedOutput(); err != nil {
		t.Fatalf("server-side dry run of config/default: %v\n%s", err, out)
	}

	objs := map[string][]byte{}
	for _, doc := range strings.Split(string(rendered), "\n---\n") {
		var meta metav1.PartialObjectMetadata
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		objs[meta.Kind+"/"+meta.Namespace+"/"+meta.Name] = []byte(doc)
	}
	get := func(key string, into any) {
		t.Helper()
		doc, ok := objs[key]
		if !ok {
			t.Fatalf("config/default has no %s (has %v)", key, slices.Sorted(func(yield func(string) bool) {
				for k := range objs {
					if !yield(k) {
						return
					}
				}
			}))
		}
		if err := yaml.Unmarshal(doc, into); err != nil {
			t.Fatal(err)
		}
	}
	defaults := managerDefaults(t)
	namespace, secret, _ := strings.Cut(defaults["webhook-cert-secret"], "/")

	deploy := &appsv1.Deployment{}
	get("Deployment/"+namespace+"/lifeline-manager", deploy)
	service := &corev1.Service{}
	get("Service/"+namespace+"/lifeline-webhook", service)
	if !labels.SelectorFromSet(service.Spec.Selector).Matches(labels.Set(deploy.Spec.Template.Labels)) {
		t.Errorf("Service lifeline-webhook selects %v, the manager's pods are labelled %v", service.Spec.Selector, deploy.Spec.Template.Labels)
	}
	if want := "lifeline-webhook." + namespace + ".svc"; defaults["webhook-dns-name"] != want {
		t.Errorf("the manager's certificate is issued for %s by default, its Service is %s", defaults["webhook-dns-name"], want)
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	get("MutatingWebhookConfiguration//"+defaults["webhook-mutating-configuration"], mutating)
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	get("ValidatingWebhookConfiguration//"+defaults["webhook-validating-configuration"], validating)
	var configs []admissionregistrationv1.WebhookClientConfig
	for _, w := range mutating.Webhooks {
		configs = append(configs, w.ClientConfig)
	}
	for _, w := range validating.Webhooks {
		configs = append(configs, w.ClientConfig)
	}
	for _, cc := range configs {
		if cc.Service == nil || cc.Service.Namespace != namespace || cc.Service.Name != "lifeline-webhook" {
			t.Errorf("a webhook calls %+v, not %s/lifeline-webhook", cc.Service, namespace)
		}
	}
	for _, name := range cluster.ConvertedCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		get("CustomResourceDefinition//"+name, crd)
		c := crd.Spec.Conversion
		if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook.ClientConfig.Service == nil ||
			c.Webhook.ClientConfig.Service.Namespace != namespace || c.Webhook.ClientConfig.Service.Name != "lifeline-webhook" ||
			c.Webhook.ClientConfig.Service.Path == nil || *c.Webhook.ClientConfig.Service.Path != "/convert" {
			t.Errorf("CRD %s converts with %+v, not through %s/lifeline-webhook /convert", name, c, namespace)
		}
		configs = append(configs, admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: c.Webhook.ClientConfig.Service.Namespace, Name: c.Webhook.ClientConfig.Service.Name}})
	}
	role := &rbacv1.Role{}
	get("Role/"+namespace+"/lifeline-manager", role)
	for _, name := range []string{secret, "lifeline-manager.lifeline.dev", strings.TrimPrefix(defaults["pps-workload-whitelist"], namespace+"/")} {
		if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.ResourceNames, name) }) {
			t.Errorf("the Role in %s names no %s", namespace, name)
		}
	}
	clusterRole := &rbacv1.ClusterRole{}
	get("ClusterRole//lifeline-manager", clusterRole)
	for _, name := range append([]string{mutating.Name, validating.Name}, cluster.ConvertedCRDs...) {
		if !slices.ContainsFunc(clusterRole.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.ResourceNames, name) }) {
			t.Errorf("the ClusterRole lets the manager patch no %s", name)
		}
	}
}

// managerDefaults reads the defaults of the manager's string flags from
// its --help.
func managerDefaults(t *testing.T) map[string]string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lifeline-manager")
	build := exec.Command("go", "build", "-o", bin, "./cmd/lifeline-manager")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	defaults := map[string]string{}
	flagLine, dflt := regexp.MustCompile(`^  -([a-z-]+) string$`), regexp.MustCompile(`\(default "([^"]*)"\)$`)
	var flag string
	for _, line := range strings.Split(string(out), "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			flag = m[1]
		} else if m := dflt.FindStringSubmatch(line); m != nil && flag != "" {
			defaults[flag] = m[1]
		}
	}
	for _, flag := range []string{"webhook-cert-secret", "webhook-dns-name", "webhook-mutating-configuration", "webhook-validating-configuration", "pps-workload-whitelist"} {
		if defaults[flag] == "" {
			t.Fatalf("no default for --%s in the manager's --help:\n%s", flag, out)
		}
	}
	return defaults
}

// withoutConversion takes the conversion stanza out of the rendered CRDs
// (config/default, the chart).
// Here the CRDs convert through this test process, by URL, and a
// server-side apply would merge the manifests' Service into that URL (an
// invalid stanza with both). envtest installed the stanza as rendered
// (config/crd/bases), and the test checks where it points.
func withoutConversion(t *testing.T, rendered []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, doc := range strings.Split(string(rendered), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if obj["kind"] == "CustomResourceDefinition" {
			delete(obj["spec"].(map[string]any), "conversion")
		}
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	return out.Bytes()
}
